"""Cached tokens a child loses to where it parts from its parent: what it could
have read from the cache its parent left had it kept the parent's bytes, less
what it does read. The rules: docs/diff-lost.md."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from .. import cache as cache_models  # a module reference: fidelity.cache imports this package

if TYPE_CHECKING:
    from ..cache import CacheModel, PromptTokens

__all__ = ["lost_tokens", "parent_entries", "surviving_entries"]


def parent_entries(cm: CacheModel, parent: PromptTokens) -> list[int]:
    """Prefix lengths the parent left in an explicit-breakpoint cache (empty for other caches)."""
    from ..cache._breakpoints import BreakpointCache

    if not isinstance(cm, BreakpointCache):
        return []
    return sorted(b for b in set(parent.breakpoints) if b >= cm.minimum)


def surviving_entries(entries: Sequence[int], child: PromptTokens, shared: int) -> list[int]:
    """The parent entries a child keeps: ending within the ``shared`` leading
    tokens, where a content block or breakpoint of the child ends too."""
    cuts = set(child.blocks) | set(child.breakpoints)
    return [b for b in entries if b <= shared and b in cuts]


def lost_tokens(cm: CacheModel, parent: PromptTokens, child: PromptTokens, read: int,
                *, same_key: bool = True, shared: int | None = None,
                levels: tuple[Sequence[int], Sequence[int]] | None = None) -> int:
    """Tokens the child loses against a child that kept the parent's prefix (``read``:
    its predicted cached tokens; ``shared``: agreeing leading tokens, computed when not
    given; ``levels``: where each cache level starts in parent and child)."""
    from ..cache._breakpoints import BreakpointCache
    from ..cache.simulator import simulated

    if not isinstance(cm, BreakpointCache):
        n = min(len(parent.tokens), len(child.tokens))
        if not n:
            return 0
        # a parent holding the child's own first n tokens: a matched prefix
        matched = cache_models.PromptTokens(child.tokens[:n], 0.0)
        ideal = simulated(cm, [matched], child).cache_read or 0
        return max(0, ideal - read)
    entries = parent_entries(cm, parent)
    if not entries:
        return 0
    if not same_key:
        shared = 0
    elif shared is None:
        shared = cache_models.common_prefix(parent.tokens, child.tokens)
    kept = surviving_entries(entries, child, shared)
    p_levels, c_levels = levels if levels is not None else ((0,), (0,))
    reach = max((_level(c_levels, c) for c in child.breakpoints), default=-1)
    gone = max((b for b in entries if b not in kept and _level(p_levels, b) <= reach), default=0)
    return max(0, gone - max([read, *kept]))


def _level(starts: Sequence[int], offset: int) -> int:
    """The cache level of a prefix ending at ``offset``: the last one that starts before it."""
    level = 0
    for i, start in enumerate(starts):
        if start < offset:
            level = i
    return level
