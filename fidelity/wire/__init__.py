"""Wire dialects: the exact bytes an official SDK sends, and the order in
which the provider's prefix cache reads them.

Each dialect module defines one :class:`Dialect` object and registers it
with :func:`register`; the built-in ones are listed in ``_BUILTIN`` and
imported the first time they are asked for. What a dialect does not say
about its provider (hosts, tokenizer, cache model, prices) is in its
provider descriptor, :mod:`fidelity.providers`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal, Protocol, Sequence

from .._registry import Registry
from ..errors import InputError
from ..model import Request

__all__ = ["SegmentKind", "Segment", "Dialect", "register", "unregister", "names", "get", "detect", "joined"]

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


def _load_all() -> list[Dialect]:
    return [_DIALECTS.get(n) for n in _DIALECTS.names()]


def names() -> list[str]:
    return sorted(_DIALECTS.names())


def get(name: str) -> Dialect:
    """The dialect called ``name``; :class:`UnknownName` lists the known ones."""
    return _DIALECTS.get(name)


def detect(obj: Any, *, path: str | None = None) -> Dialect:
    """Guess the dialect of a parsed wire body; the error says why it could not."""
    hits = [d for d in _load_all() if d.detect(obj)]
    if len(hits) == 1:
        return hits[0]
    if not hits:
        raise InputError(
            "cannot detect the provider of this body; pass --provider (known: "
            + ", ".join(names()) + ")",
            path=path,
        )
    # A body with Anthropic-only marks is never given to an OpenAI-family
    # dialect (DashScope also takes cache_control blocks, DeepSeek a top-level
    # thinking). Otherwise several OpenAI-compatible dialects can accept one
    # body: the most specific (highest ``priority``) wins, e.g. deepseek over
    # openai-chat.
    hits.sort(key=lambda d: (d.name == "anthropic-messages", getattr(d, "priority", 0)), reverse=True)
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
