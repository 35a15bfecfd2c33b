"""The canonical, provider-neutral :class:`Request` that every reader produces,
every fork builder maps and every wire dialect renders. Immutable (frozen
dataclasses, tuples, :class:`FrozenDict`), and order is data: nothing here
sorts keys, since key order in schemas and arguments reaches the cache.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field, replace
from typing import Any, Literal, overload

__all__ = [
    "FrozenDict",
    "freeze",
    "thaw",
    "written_alike",
    "RenderKey",
    "Route",
    "SystemBlock",
    "Tool",
    "Text",
    "Reasoning",
    "ToolCall",
    "ToolResult",
    "Image",
    "Part",
    "Message",
    "Request",
    "EMPTY",
]


class FrozenDict(dict[str, Any]):
    """A ``dict`` that refuses mutation and keeps insertion order (a ``dict``
    subclass, so that ``orjson`` and ``json`` serialise it natively)."""

    __slots__ = ()

    def _readonly(self, *args: Any, **kwargs: Any) -> None:
        raise TypeError("FrozenDict is immutable")

    __setitem__ = __delitem__ = _readonly
    clear = pop = popitem = setdefault = update = _readonly  # type: ignore[assignment]
    __ior__ = _readonly  # type: ignore[assignment]

    def __hash__(self) -> int:  # type: ignore[override]
        return hash(tuple((k, _hashable(v)) for k, v in self.items()))

    def __repr__(self) -> str:
        return f"FrozenDict({dict.__repr__(self)})"

    def __reduce__(self) -> tuple[Any, ...]:
        return (FrozenDict, (dict(self),))

    def __copy__(self) -> FrozenDict:
        return self

    def __deepcopy__(self, memo: dict[int, Any]) -> FrozenDict:
        return self


def _hashable(value: Any) -> Any:
    if isinstance(value, list):
        return tuple(_hashable(v) for v in value)
    if isinstance(value, dict) and not isinstance(value, FrozenDict):
        return tuple((k, _hashable(v)) for k, v in value.items())
    return value


EMPTY: FrozenDict = FrozenDict()


@overload
def freeze(value: dict[str, Any]) -> FrozenDict: ...
@overload
def freeze(value: None) -> None: ...
@overload
def freeze(value: Any) -> Any: ...
def freeze(value: Any) -> Any:
    """Return an immutable copy of a JSON value: dicts become ``FrozenDict``,
    lists become tuples; key order is preserved exactly.

    >>> freeze({"b": [1, {"a": 2}]})
    FrozenDict({'b': (1, FrozenDict({'a': 2}))})
    """
    if isinstance(value, FrozenDict):
        return value
    if isinstance(value, dict):
        return FrozenDict((k, freeze(v)) for k, v in value.items())
    if isinstance(value, (list, tuple)):
        return tuple(freeze(v) for v in value)
    return value


@overload
def thaw(value: dict[str, Any]) -> dict[str, Any]: ...
@overload
def thaw(value: Any) -> Any: ...
def thaw(value: Any) -> Any:
    """Return a plain, mutable copy (dicts and lists) of a frozen JSON value,
    in the same key order. Used to hand values to SDKs and deepdiff."""
    if isinstance(value, dict):
        return {k: thaw(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [thaw(v) for v in value]
    return value


def written_alike(a: Any, b: Any) -> bool:
    """True when ``a`` and ``b`` render to the same bytes in any dialect: equal,
    with the same type at every node (``True`` is not ``1``), keys in the same
    order, floats of the same sign (``-0.0`` is not ``0.0``), and the very same
    object in each field equality ignores (a request's ``layout``)."""
    if a is b:
        return True
    kind = type(a)
    if kind is not type(b):
        return False
    if kind is tuple or kind is list:  # from the end: two requests of a session differ late, if at all
        return len(a) == len(b) and all(map(written_alike, reversed(a), reversed(b)))
    if kind is FrozenDict or kind is dict:
        return len(a) == len(b) and list(a) == list(b) and all(written_alike(a[k], b[k]) for k in a)
    if kind is float:
        return a == b and math.copysign(1.0, a) == math.copysign(1.0, b)
    fields = getattr(kind, "__dataclass_fields__", None)
    if fields is not None:
        for name, spec in fields.items():
            x, y = getattr(a, name), getattr(b, name)
            if not (written_alike(x, y) if spec.compare else x is y):
                return False
        return True
    return bool(a == b)


class RenderKey:
    """A request as a memo key of its renderings: equal to another written
    alike (:func:`written_alike`); its hash reads only the request's shape and
    its last message's text (cheaper than the request's own hash)."""

    __slots__ = ("request", "_hash")

    def __init__(self, request: Request) -> None:
        self.request = request
        last = request.messages[-1] if request.messages else None
        self._hash = hash((request.route, len(request.system), len(request.tools), len(request.messages),
                           tuple(request.params), id(request.layout), last and (last.role, len(last.parts), last.text())))

    def __hash__(self) -> int:
        return self._hash

    def __eq__(self, other: object) -> bool:
        return isinstance(other, RenderKey) and written_alike(self.request, other.request)


def _frozen(obj: Any, *names: str) -> None:
    for name in names:
        object.__setattr__(obj, name, freeze(getattr(obj, name)))


@dataclass(frozen=True)
class Route:
    """Where a request goes: provider (a cache-model / price family such as
    ``openai``, ``anthropic``, ``deepseek``) and model name."""

    provider: str
    model: str


@dataclass(frozen=True)
class SystemBlock:
    """One block of the system prompt. ``name`` labels a section (DSH's
    ``tool:report``) and never reaches the wire; ``cache_control`` is the
    Anthropic/DashScope breakpoint marker, ``extra`` other wire keys in order."""

    text: str
    name: str | None = None
    cache_control: FrozenDict | None = None
    extra: FrozenDict = EMPTY

    def __post_init__(self) -> None:
        _frozen(self, "cache_control", "extra")


@dataclass(frozen=True)
class Tool:
    """A tool schema: ``parameters`` exactly as the caller wrote it, key order
    included; ``extra`` other keys of the function object, in their order."""

    name: str
    description: str | None = None
    parameters: FrozenDict | None = None
    extra: FrozenDict = EMPTY

    def __post_init__(self) -> None:
        _frozen(self, "parameters", "extra")


@dataclass(frozen=True)
class Text:
    text: str
    cache_control: FrozenDict | None = None
    kind: Literal["text"] = field(default="text", init=False)

    def __post_init__(self) -> None:
        _frozen(self, "cache_control")


@dataclass(frozen=True)
class Reasoning:
    """Model reasoning carried in history (DeepSeek ``reasoning_content``,
    Anthropic ``thinking`` with its ``signature``, Gemini ``thought`` parts)."""

    text: str
    signature: str | None = None
    kind: Literal["reasoning"] = field(default="reasoning", init=False)


@dataclass(frozen=True)
class ToolCall:
    """A tool call made by the model: ``arguments`` parsed (key order kept),
    ``arguments_json`` the exact string where the wire carries one (renderers
    prefer it); ``cache_control`` is Anthropic's marker on ``tool_use``."""

    id: str
    name: str
    arguments: Any = EMPTY
    arguments_json: str | None = None
    cache_control: FrozenDict | None = None
    kind: Literal["tool_call"] = field(default="tool_call", init=False)

    def __post_init__(self) -> None:
        _frozen(self, "arguments", "cache_control")


@dataclass(frozen=True)
class ToolResult:
    """The result of a tool call: ``content`` is text, a tuple of parts or
    Gemini's ``response`` object; ``cache_control`` is Anthropic's marker on
    the ``tool_result`` block (DashScope's ride on the ``Text`` parts)."""

    call_id: str
    name: str | None = None
    content: Any = ""
    is_error: bool = False
    cache_control: FrozenDict | None = None
    kind: Literal["tool_result"] = field(default="tool_result", init=False)

    def __post_init__(self) -> None:
        _frozen(self, "content", "cache_control")


@dataclass(frozen=True)
class Image:
    """An image by reference (URL or data URL); ``detail`` is OpenAI's knob,
    ``cache_control`` Anthropic's marker."""

    url: str
    detail: str | None = None
    media_type: str | None = None
    cache_control: FrozenDict | None = None
    kind: Literal["image"] = field(default="image", init=False)

    def __post_init__(self) -> None:
        _frozen(self, "cache_control")


Part = Text | Reasoning | ToolCall | ToolResult | Image


@dataclass(frozen=True)
class Message:
    """One conversation message: a role and ordered parts. ``extra`` keeps
    unknown wire keys of the message object, in order."""

    role: str
    parts: tuple[Part, ...] = ()
    extra: FrozenDict = EMPTY

    def __post_init__(self) -> None:
        if not isinstance(self.parts, tuple):
            object.__setattr__(self, "parts", tuple(self.parts))
        _frozen(self, "extra")

    def tool_calls(self) -> tuple[ToolCall, ...]:
        return tuple(p for p in self.parts if isinstance(p, ToolCall))

    def tool_results(self) -> tuple[ToolResult, ...]:
        return tuple(p for p in self.parts if isinstance(p, ToolResult))

    def text(self) -> str:
        return "".join(p.text for p in self.parts if isinstance(p, Text))


@dataclass(frozen=True)
class Request:
    """A provider-neutral chat request; ``params`` holds the other request
    parameters (``max_tokens``, ``thinking``...) in the caller's order."""

    route: Route
    system: tuple[SystemBlock, ...] = ()
    tools: tuple[Tool, ...] = ()
    messages: tuple[Message, ...] = ()
    params: FrozenDict = EMPTY
    #: how the body is written (:mod:`fidelity.wire.layout`): the body it was
    #: parsed from, or a named client profile; ``None``: the dialect's current
    #: SDK. Not part of the request's value (equality and hashing ignore it).
    layout: Any = field(default=None, compare=False, hash=False, repr=False)

    def __post_init__(self) -> None:
        for name in ("system", "tools", "messages"):
            value = getattr(self, name)
            if not isinstance(value, tuple):
                object.__setattr__(self, name, tuple(value))
        _frozen(self, "params")

    def system_text(self, sep: str = "\n\n") -> str:
        return sep.join(block.text for block in self.system)

    def with_params(self, **changes: Any) -> Request:
        merged = dict(self.params)
        merged.update(changes)
        return replace(self, params=freeze(merged))
