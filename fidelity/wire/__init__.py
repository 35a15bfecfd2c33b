"""Wire dialects: the exact bytes an official SDK sends, and the order in
which the provider's prefix cache reads them.

Each dialect module defines one :class:`Dialect` object and registers it.
Adding a provider is adding one module to ``_MODULES``.
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass
from typing import Any, Literal, Protocol, Sequence

from ..errors import InputError, UnknownName
from ..model import Request

SegmentKind = Literal["params", "tools", "system", "message"]


@dataclass(frozen=True)
class Segment:
    """One unit of the prompt as a provider's prefix cache reads it.

    ``pointer`` is the RFC 6901 JSON pointer of the value in the wire body
    (``""`` for the params segment, which gathers several top-level keys);
    ``data`` its exact bytes as they appear in the body (for the params
    segment: each cache-key member ``"key":value`` as it appears, in the
    dialect's documented order).
    """

    kind: SegmentKind
    index: int
    pointer: str
    data: bytes
    #: the segment as the model reads it (its chat-template rendering) where
    #: the dialect knows it; token counts use it and fall back to ``data``.
    text: str | None = None


class Dialect(Protocol):
    name: str
    #: provider family for cache model and prices (``openai``, ``anthropic``...)
    provider: str

    def render(self, request: Request) -> bytes: ...

    def parse(self, body: bytes) -> Request: ...

    def cache_view(self, body: bytes) -> list[Segment]: ...

    def detect(self, obj: Any) -> bool:
        """True when a parsed JSON body looks like this dialect's request."""
        ...


_MODULES = (
    "openai_chat",
    "openai_responses",
    "anthropic_messages",
    "gemini",
    "deepseek",
    "dashscope",
    "vllm",
)
_REGISTRY: dict[str, Dialect] = {}


def register(dialect: Dialect) -> Dialect:
    _REGISTRY[dialect.name] = dialect
    return dialect


def _load_all() -> None:
    for mod in _MODULES:
        try:
            importlib.import_module(f"{__name__}.{mod}")
        except ModuleNotFoundError as exc:  # a dialect not written yet
            if exc.name != f"{__name__}.{mod}":
                raise


def names() -> list[str]:
    _load_all()
    return sorted(_REGISTRY)


def get(name: str) -> Dialect:
    _load_all()
    try:
        return _REGISTRY[name]
    except KeyError:
        raise UnknownName("provider", name, list(_REGISTRY)) from None


def detect(obj: Any, *, path: str | None = None) -> Dialect:
    """Guess the dialect of a parsed wire body; the error says why it could not."""
    _load_all()
    hits = [d for d in _REGISTRY.values() if d.detect(obj)]
    if len(hits) == 1:
        return hits[0]
    if not hits:
        raise InputError(
            "cannot detect the provider of this body; pass --provider (known: "
            + ", ".join(sorted(_REGISTRY)) + ")",
            path=path,
        )
    # Several OpenAI-compatible dialects can accept one body: the most
    # specific (highest ``priority``) wins, e.g. deepseek over openai-chat.
    hits.sort(key=lambda d: getattr(d, "priority", 0), reverse=True)
    return hits[0]


def cache_view_at(dialect: Dialect, body: bytes, endpoint: str | None = None) -> list[Segment]:
    """``dialect.cache_view(body)`` as the cache of ``endpoint`` (a URL; ``None``:
    the provider's own API) reads it. Only dialects whose view depends on the
    endpoint (``endpoint_aware = True``, Anthropic Messages) are told it."""
    if getattr(dialect, "endpoint_aware", False):
        return dialect.cache_view(body, endpoint=endpoint)  # type: ignore[call-arg]
    return dialect.cache_view(body)


def joined(segments: Sequence[Segment]) -> bytes:
    """The cache view as one byte string: segments concatenated in cache order."""
    return b"".join(s.data for s in segments)
