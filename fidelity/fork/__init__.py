"""Reference fork and seed builders: how a child request is made from its
parent, one module per harness rule.

Builders (``completed-turn``, ``gemini-placeholder``, ``claude-placeholder``,
``cache-safe``, ``cache-safe-fallback``, ``spawn``) are pure functions
``(parent: Request, directive: str) -> Request``; sibling children differ only
in the directive's bytes. :func:`fork_request` picks one by name. Each rule,
its source and examples: docs/fork.md."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from .._registry import Registry
from ..model import Request
from . import cache_safe, claude_placeholder, completed_turn, gemini_placeholder, spawn
from .balance import Problem, event_problems, history_problems
from .cache_safe import CacheSafeParams, CacheSafeStore
from .completed_turn import completed_turn_seed, seed_at, seed_length
from .gemini_placeholder import ForkPlan, child_message, is_in_fork_child

__all__ = [
    "BUILDERS",
    "Builder",
    "fork_request",
    "names",
    "ForkPlan",
    "child_message",
    "is_in_fork_child",
    "completed_turn_seed",
    "seed_at",
    "seed_length",
    "CacheSafeParams",
    "CacheSafeStore",
    "Problem",
    "history_problems",
    "event_problems",
    "cache_safe",
    "claude_placeholder",
    "completed_turn",
    "gemini_placeholder",
    "spawn",
]

Builder = Callable[..., Request]


def _cache_safe(parent: Request, directive: str, **options: Any) -> Request:
    """Snapshot the parent itself, then fork from the snapshot."""
    return cache_safe.fork_request(CacheSafeStore().update(parent), parent, directive, **options)


def _cache_safe_fallback(parent: Request, directive: str, **options: Any) -> Request:
    """Fork as if no snapshot existed yet."""
    return cache_safe.fork_request(None, parent, directive, **options)


BUILDERS: Registry[Builder] = Registry("fork builder")
for _name, _builder in (
    ("completed-turn", completed_turn.fork_request),
    ("gemini-placeholder", gemini_placeholder.fork_request),
    ("claude-placeholder", claude_placeholder.fork_request),
    ("cache-safe", _cache_safe),
    ("cache-safe-fallback", _cache_safe_fallback),
    ("spawn", spawn.fork_request),
):
    BUILDERS.add(_name, _builder)


def names() -> list[str]:
    """Builder names, in registry order."""
    return BUILDERS.names()


def fork_request(parent: Request, builder: str | Builder, directive: str, **options: Any) -> Request:
    """The child's first request made from ``parent`` by ``builder`` (a name from
    :data:`BUILDERS` or a callable), ``options`` passed on; :class:`~fidelity.errors.UnknownName`
    or :class:`~fidelity.errors.ForkUnavailable` when it cannot."""
    if isinstance(builder, str):
        builder = BUILDERS.get(builder)
    return builder(parent, directive, **options)
