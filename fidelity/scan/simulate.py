"""One partition's cache, replayed in time order: the narrow seam where the
cache simulator plugs in.

:func:`simulate_partition` takes the requests of one partition in time order
and says, for each, how many prompt tokens its provider's cache serves
(``read``), how many it stores (``written``), its prompt length and the
earlier request it reads from (``parent``: an index into the list, ``None``
when it reads nothing).

This implementation is a stand-in until the cache simulator
(``fidelity.cache.simulator``) lands: it finds the longest common token
prefix among earlier live requests and applies the provider's rule
(:meth:`fidelity.cache.CacheModel.reusable`). The search walks a trie of
segments (each node one segment, interned to an int by the caller), so a
request costs one dict lookup per segment plus a token comparison inside the
first segment that differs: O(segments + new tokens), not O(history). Each
node remembers when a request last passed through it; an entry older than the
model's ``ttl`` is not read (reading refreshes it, as every provider documents).
For explicit-breakpoint caches (Anthropic, DashScope explicit) a request
reads the longest prefix ending where an earlier request had a
``cache_control`` breakpoint (the 20-block lookback and per-breakpoint TTLs
are not modelled) and stores up to its own last breakpoint. Outputs kept in
the cache (DeepSeek, engines) are not modelled: logs rarely carry them.
"""

from __future__ import annotations

from array import array
from collections.abc import Sequence
from dataclasses import dataclass, field

from ..cache import CacheModel, common_prefix

__all__ = ["SimRequest", "Outcome", "PartitionCache", "simulate_partition"]


@dataclass(frozen=True)
class SimRequest:
    """One request of a partition: its time (seconds), its cache-view
    segments as interned ids (equal ids: equal bytes) and each segment's
    token ids (read-only arrays)."""

    time: float
    segments: Sequence[int]
    tokens: Sequence[array[int]]
    #: indexes of segments that carry an explicit ``cache_control`` breakpoint
    breakpoints: frozenset[int] = frozenset()

    @property
    def prompt(self) -> int:
        return sum(len(t) for t in self.tokens)


@dataclass(frozen=True)
class Outcome:
    """What the cache does with one request: tokens ``read`` from it,
    ``written`` to it, the ``prompt`` length, the index of the earlier
    request it reads from (``parent``), and ``shared``: the longest common
    token prefix with any live earlier request, before the provider's rules."""

    read: int
    written: int
    prompt: int
    parent: int | None
    shared: int = 0
    #: the earlier request sharing the longest prefix (even one too short to read)
    match: int | None = None


@dataclass
class _Node:
    cum: int  # tokens from the start of the prompt to the end of this segment
    tokens: array[int]
    last_used: float
    request: int
    children: dict[int, _Node] = field(default_factory=dict)
    bp: bool = False  # a request wrote a breakpoint entry ending here


class PartitionCache:
    """The state of one partition's cache, fed one request at a time
    (:meth:`feed`), with a cap on the token ids it holds (``max_tokens``):
    over it, expired entries are dropped first, then the least recently used
    (``evicted`` counts entries dropped while still live)."""

    def __init__(self, model: CacheModel, max_tokens: int = 32 * 1024 * 1024) -> None:
        self.model = model
        self.root = _Node(0, array("q"), float("-inf"), -1)
        self.max_tokens = max_tokens
        self.held = 0
        self.evicted = 0
        self._n = 0
        self.explicit = hasattr(model, "max_breakpoints")  # Anthropic / DashScope explicit caching

    def _alive(self, node: _Node, now: float) -> bool:
        return self.model.ttl is None or now - node.last_used <= self.model.ttl

    def feed(self, req: SimRequest) -> Outcome:
        index = self._n
        self._n += 1
        now = req.time
        node = self.root
        depth = 0
        segs = req.segments
        n_segs = len(segs)
        bp_read, bp_parent = 0, None
        while depth < n_segs:
            child = node.children.get(segs[depth])
            if child is None or not self._alive(child, now):
                break
            node = child
            depth += 1
            if node.bp:
                bp_read, bp_parent = node.cum, node.request
        shared = node.cum
        parent = node.request if depth else None
        if depth < n_segs and node.children:
            mine = req.tokens[depth]
            best = 0
            # the most recently used siblings first; a few are enough
            for sib in sorted(node.children.values(), key=lambda s: -s.last_used)[:8]:
                if not self._alive(sib, now):
                    continue
                k = common_prefix(sib.tokens, mine)
                if k > best:
                    best, parent = k, sib.request
            shared += best
        prompt = req.prompt
        match = parent if shared else None
        if self.explicit:
            # explicit breakpoints: an entry is a prefix that ends at an earlier
            # request's breakpoint; nothing is stored without one
            read = bp_read if req.breakpoints and bp_read >= getattr(self.model, "minimum", 0) else 0
            parent = bp_parent
            ends = [sum(len(t) for t in req.tokens[: i + 1]) for i in sorted(req.breakpoints)]
            stored = max([e for e in ends if e >= getattr(self.model, "minimum", 0)], default=0)
        else:
            read = min(prompt, self.model.reusable(shared, prompt)) if shared else 0
            stored = min(prompt, self.model.reusable(prompt, prompt + 1))
        if read == 0:
            parent = None
        # store this request's path
        node = self.root
        cum = 0
        for i in range(n_segs):
            ids = req.tokens[i]
            cum += len(ids)
            child = node.children.get(segs[i])
            if child is None:
                child = node.children[segs[i]] = _Node(cum, ids, now, index)
                self.held += len(ids)
            else:
                child.last_used = now
                child.request = index
            if i in req.breakpoints:
                child.bp = True
            node = child
        if self.held > self.max_tokens:
            self._shrink(now)
        return Outcome(read=read, written=max(0, stored - read), prompt=prompt, parent=parent, shared=shared,
                       match=match)

    def _shrink(self, now: float) -> None:
        def prune(node: _Node, keep: float) -> None:
            for sid, child in list(node.children.items()):
                if child.last_used < keep or not self._alive(child, now):
                    if self._alive(child, now):
                        self.evicted += 1
                    self.held -= _weight(child)
                    del node.children[sid]
                else:
                    prune(child, keep)
        prune(self.root, float("-inf"))
        if self.held > self.max_tokens:  # still over: drop the older half
            times = sorted(_times(self.root))
            prune(self.root, times[len(times) // 2] if times else now)


def _weight(node: _Node) -> int:
    total, stack = 0, [node]
    while stack:
        n = stack.pop()
        total += len(n.tokens)
        stack.extend(n.children.values())
    return total


def _times(node: _Node) -> list[float]:
    out, stack = [], list(node.children.values())
    while stack:
        n = stack.pop()
        out.append(n.last_used)
        stack.extend(n.children.values())
    return out


def simulate_partition(requests: Sequence[SimRequest], model: CacheModel) -> list[Outcome]:
    """Replay one partition's requests (in time order) through ``model``'s
    cache; one :class:`Outcome` per request."""
    cache = PartitionCache(model)
    return [cache.feed(r) for r in requests]
