"""Wire dialects: the exact bytes an official SDK sends, and the order in
which the provider's prefix cache reads them. Each dialect module registers
one :class:`Dialect` (the built-ins are imported when first asked for); hosts,
tokenizer, cache model and prices are in :mod:`fidelity.providers`.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Literal, Protocol

from .._registry import Registry
from ..errors import InputError
from ..model import Request

__all__ = ["SegmentKind", "Segment", "Dialect", "register", "unregister", "names", "get", "detect", "undetected", "joined"]

SegmentKind = Literal["params", "tools", "system", "message"]


@dataclass(frozen=True)
class Segment:
    """One unit of the prompt as a provider's prefix cache reads it:
    ``pointer``, the RFC 6901 pointer of the value in the body (``""``: the
    params segment, the cache-key members in the dialect's order), ``data``
    its exact bytes."""

    kind: SegmentKind
    index: int
    pointer: str
    data: bytes
    #: its chat-template rendering where the dialect knows it (token counts prefer it to ``data``)
    text: str | None = None


class Dialect(Protocol):
    @property
    def name(self) -> str: ...

    @property
    def provider(self) -> str:
        """Provider family for cache model and prices (``openai``, ``anthropic``...)."""
        ...

    def render(self, request: Request) -> bytes: ...

    def parse(self, body: bytes) -> Request: ...

    def cache_view(self, body: bytes) -> list[Segment]: ...

    def detect(self, obj: Any) -> bool:
        """True when a parsed JSON body looks like this dialect's request."""
        ...


#: built-in dialects: name -> "module:object", imported when first asked for
_BUILTIN = {
    "openai-chat": "openai_chat:OPENAI_CHAT",
    "openai-responses": "openai_responses:OPENAI_RESPONSES",
    "anthropic-messages": "anthropic_messages:ANTHROPIC_MESSAGES",
    "gemini": "gemini:GEMINI",
    "deepseek": "deepseek:DEEPSEEK",
    "dashscope": "dashscope:DASHSCOPE",
    "vllm": "vllm:VLLM",
    "sglang": "vllm:SGLANG",
}
_DIALECTS: Registry[Dialect] = Registry("provider")
for _name, _ref in _BUILTIN.items():
    _DIALECTS.add(_name, f"{__name__}.{_ref}", lazy=True)


def register(dialect: Dialect) -> Dialect:
    """Add (or replace) a dialect; a module that defines one calls this."""
    _DIALECTS.add(dialect.name, dialect)
    return dialect


def unregister(name: str) -> None:
    """Remove a dialect (tests, plugins that swap one out)."""
    _DIALECTS.remove(name)


def names() -> list[str]:
    return sorted(_DIALECTS.names())


def get(name: str) -> Dialect:
    """The dialect called ``name``; :class:`UnknownName` lists the known ones."""
    return _DIALECTS.get(name)


def undetected(path: Any = None) -> InputError:
    """The one error for a body no dialect (and no URL) places."""
    return InputError("cannot detect the provider of this body; pass --provider (known: " + ", ".join(names()) + ")",
                      path=path)


def detect(obj: Any, *, path: str | None = None) -> Dialect:
    """Guess the dialect of a parsed wire body; the error says why it could not."""
    hits = [d for d in map(_DIALECTS.get, _DIALECTS.names()) if d.detect(obj)]
    if len(hits) == 1:
        return hits[0]
    if not hits:
        raise undetected(path)
    # Anthropic-only marks win over OpenAI-family dialects; among these the most
    # specific (highest ``priority``) wins, e.g. deepseek over openai-chat.
    hits.sort(key=lambda d: (d.name == "anthropic-messages", getattr(d, "priority", 0)), reverse=True)
    return hits[0]


def cache_view_at(dialect: Dialect, body: bytes, endpoint: str | None = None) -> list[Segment]:
    """``dialect.cache_view(body)`` as the cache of ``endpoint`` (a URL; ``None``:
    the provider's own API) reads it, for dialects with ``endpoint_aware``."""
    if getattr(dialect, "endpoint_aware", False):
        return dialect.cache_view(body, endpoint=endpoint)  # type: ignore[call-arg]
    return dialect.cache_view(body)


def joined(segments: Sequence[Segment]) -> bytes:
    """The cache view as one byte string: segments concatenated in cache order."""
    return b"".join(s.data for s in segments)
