"""Where a harness puts its cache breakpoints, applied to every request it sends:
each :data:`PLACEMENTS` entry, a pure ``(request, provider) -> Request``,
replaces every ``cache_control`` marker with its own. Each placement and what
it costs: docs/report.md, "Breakpoint placement".
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import replace

from .errors import UnknownName
from .model import FrozenDict, Image, Message, Request, Text, ToolCall, ToolResult, freeze

__all__ = ["PLACEMENTS", "DEFAULT", "EPHEMERAL", "place", "strip", "affects"]

EPHEMERAL = FrozenDict({"type": "ephemeral"})
#: the placement the report's fixtures use unless a variant names another
DEFAULT = "claude-code"
#: providers whose cache reads and writes depend on the markers
_MARKED = frozenset({"anthropic", "dashscope"})


def affects(provider: str) -> bool:
    """Does the placement change what ``provider``'s cache does?"""
    return provider in _MARKED


#: the parts that can carry a ``cache_control`` marker (thinking blocks cannot)
_MARKABLE = (Text, ToolCall, ToolResult, Image)


def _strip_message(m: Message) -> Message:
    if not any(getattr(p, "cache_control", None) is not None for p in m.parts):
        return m
    return replace(m, parts=tuple(replace(p, cache_control=None)
                                  if isinstance(p, _MARKABLE) and p.cache_control is not None else p
                                  for p in m.parts))


def strip(request: Request) -> Request:
    """``request`` without any ``cache_control`` marker (blocks, parts, top level)."""
    system = tuple(replace(b, cache_control=None) if b.cache_control is not None else b for b in request.system)
    params = request.params
    if "cache_control" in params:
        params = freeze({k: v for k, v in params.items() if k != "cache_control"})
    return replace(request, system=system, params=params,
                   messages=tuple(_strip_message(m) for m in request.messages))


def _mark_last_part(m: Message) -> Message:
    """The message with a marker on its last part that can carry one
    (thinking blocks cannot, https://platform.claude.com/docs/en/build-with-claude/prompt-caching)."""
    parts = list(m.parts)
    for i in range(len(parts) - 1, -1, -1):
        part = parts[i]
        if isinstance(part, _MARKABLE):
            parts[i] = replace(part, cache_control=EPHEMERAL)
            return replace(m, parts=tuple(parts))
    return m


def _mark_system(request: Request) -> Request:
    if not request.system:
        return request
    system = list(request.system)
    system[-1] = replace(system[-1], cache_control=EPHEMERAL)
    return replace(request, system=tuple(system))


def _claude_code(request: Request, provider: str) -> Request:
    """The last system block and the last block of each of the last two messages
    (Claude Code's recorded pattern; https://platform.claude.com/docs/en/build-with-claude/prompt-caching)."""
    request = _mark_system(strip(request))
    messages = list(request.messages)
    for i in range(max(0, len(messages) - 2), len(messages)):
        messages[i] = _mark_last_part(messages[i])
    return replace(request, messages=tuple(messages))


def _automatic(request: Request, provider: str) -> Request:
    request = strip(request)
    if provider != "anthropic":
        return request
    return replace(request, params=freeze({**request.params, "cache_control": EPHEMERAL}))


PLACEMENTS: Mapping[str, Callable[[Request, str], Request]] = {
    "claude-code": _claude_code,
    "automatic": _automatic,
    "system-only": lambda request, provider: _mark_system(strip(request)),
    "none": lambda request, provider: strip(request),
}


def place(request: Request, placement: str, provider: str) -> Request:
    """``request`` with ``placement``'s markers; unchanged for providers they do not affect."""
    fn = PLACEMENTS.get(placement)
    if fn is None:
        raise UnknownName("breakpoint placement", placement, list(PLACEMENTS))
    if not affects(provider):
        return request
    return fn(request, provider)
