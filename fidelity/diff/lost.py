"""Cached tokens a child loses to where it parts from its parent.

"Lost" is what the child could have read from the cache its parent left had
its prompt kept the parent's bytes, less what it does read (the cache
model's prediction). How that is counted depends on the kind of cache:

* **Explicit breakpoints** (Anthropic, DashScope explicit): the parent left
  an entry at each of its breakpoints that reaches the model's minimum. An
  entry *survives* when the child's prompt starts with the parent's tokens up
  to it, that is when it ends at or before the first divergence of the two
  cache views (a position, not a segment index: a child with fewer tools, or
  another system prompt, still keeps what lies before the divergence), and
  a content block of the child ends there too (the cache keys whole blocks:
  a system prompt the child extends by a word is another block). An
  entry past the divergence is lost when the child would have reached it:
  the child has a breakpoint in the entry's cache level or a later one (a
  child that marks nothing reads nothing, matched or not). Levels are
  Anthropic's tools, system and messages when known, else one level: a child
  with fewer tools or another system prompt is still held against the
  parent's system entry, and a child that marks only its system prompt is
  not held against the parent's message entries. Inside the level the
  child is taken to reach as deep as the parent (a child that kept the
  parent's prefix extends it); the 20-block lookback is not applied to
  entries the child never shared. The loss runs from the last surviving
  entry (or what the child reads, when more) to the deepest lost entry, so
  tokens before a surviving breakpoint are never
  counted, and the loss never exceeds the parent's cached prefix.
* **Automatic prefix caches** (OpenAI, DeepSeek, Gemini implicit, engines):
  every prefix is stored; a child whose prefix matched the parent's first
  ``min(P, C)`` tokens reads what the model's rounding allows of them.

The positions are token offsets in the provider's cache order, where
request-level settings that invalidate only part of the prefix have already
been folded in (:mod:`fidelity.cache.invalidation`): the first divergence of
an Anthropic pair whose ``tool_choice`` changed lies at the first message,
not at the start.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from .. import cache as cache_models  # a module reference: fidelity.cache imports this package

if TYPE_CHECKING:
    from ..cache import CacheModel, PromptTokens

__all__ = ["lost_tokens", "parent_entries", "surviving_entries"]


def parent_entries(cm: CacheModel, parent: PromptTokens) -> list[int]:
    """Prefix lengths the parent left in an explicit-breakpoint cache: its
    breakpoints that reach the model's minimum (empty for other caches)."""
    from ..cache._breakpoints import BreakpointCache

    if not isinstance(cm, BreakpointCache):
        return []
    return sorted(b for b in set(parent.breakpoints) if b >= cm.minimum)


def surviving_entries(entries: Sequence[int], child: PromptTokens, shared: int) -> list[int]:
    """The parent entries a child keeps: ending within the ``shared`` tokens
    at the start of both prompts, where a content block (or a breakpoint)
    of the child ends too."""
    cuts = set(child.blocks) | set(child.breakpoints)
    return [b for b in entries if b <= shared and b in cuts]


def lost_tokens(cm: CacheModel, parent: PromptTokens, child: PromptTokens, read: int,
                *, same_key: bool = True, shared: int | None = None,
                levels: tuple[Sequence[int], Sequence[int]] | None = None) -> int:
    """Tokens the child loses against a child that kept the parent's prefix
    (see the module docstring). ``read``: what the cache model predicts the
    child reads; ``same_key``: parent and child share a cache partition
    (``False``: another model, nothing survives); ``shared``: tokens at the
    start of both prompts that agree (computed when not given); ``levels``:
    the token offsets where each cache level starts, in the parent and in
    the child (ascending; ``None``: one level from offset 0)."""
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
    """The cache level of a prefix ending at ``offset``: the last one that
    starts before it (an entry that ends where the next level starts
    belongs to the level it closes)."""
    level = 0
    for i, start in enumerate(starts):
        if start < offset:
            level = i
    return level
