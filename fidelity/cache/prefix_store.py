"""The prefix caches' store: every token prefix written and still live, found
by longest match (a trie of token blocks with lifetimes and an LRU capacity).

Used by :class:`fidelity.cache.simulator.Simulator` for the providers and
engines whose cache is a plain prefix cache (OpenAI, DeepSeek, Gemini,
DashScope implicit, vLLM, SGLang, llama.cpp).
"""

from __future__ import annotations

from array import array
from collections.abc import Hashable
from dataclasses import dataclass
from typing import Any

import numpy as np

__all__ = ["PrefixStore"]

_ITEM = 8  # bytes per packed token id (array('q'))



class _Growing:
    """A numpy vector that doubles when full (node attributes by node id)."""

    __slots__ = ("a", "n")

    def __init__(self, dtype: Any, fill: Any) -> None:
        self.a = np.full(64, fill, dtype=dtype)
        self.n = 0

    def append(self, value: Any) -> int:
        if self.n == len(self.a):
            grown = np.empty(len(self.a) * 2, dtype=self.a.dtype)
            grown[: self.n] = self.a
            self.a = grown
        self.a[self.n] = value
        self.n += 1
        return self.n - 1


@dataclass
class _Record:
    """One stored sequence: its tokens and the node ids of its full blocks."""

    tokens: array[int]
    path: np.ndarray
    label: Hashable


class PrefixStore:
    """The prefix trie of one partition of an automatic prefix cache.

    ``unit``: tokens per trie block (the model's step, unit or block size
    where it has one; smaller units are served by extending the match into
    the children of the deepest live block). ``ttl``: seconds an entry
    lives after its last use (``None``: no limit). ``capacity``: tokens the
    cache holds at most; beyond it the least recently used blocks go, the
    deepest first (vLLM's free-block queue evicts a sequence's tail first).

    Invariant used for liveness: a request that uses a block uses every
    block before it, so along any path the last-use time never increases
    with depth, and "the deepest live block on a path" is one search.
    """

    ROOT = 0

    def __init__(self, unit: int, ttl: float | None = None, capacity: int | None = None) -> None:
        if unit < 1:
            raise ValueError("unit must be at least 1")
        self.unit = unit
        self.ttl = ttl
        self.capacity = capacity
        self._children: dict[tuple[int, bytes], int] = {}
        self._kids: list[list[int]] = [[]]
        self._key: list[tuple[int, bytes] | None] = [None]
        self._owner: list[int] = [-1]
        self._index: list[int] = [0]  # position of the node in its owner's path (full blocks)
        self._time = _Growing(np.float64, np.inf)
        self._seq = _Growing(np.int64, 0)
        self._last = _Growing(np.int64, -1)
        self._depth = _Growing(np.int64, 0)
        self._gone = _Growing(np.bool_, False)
        for g in (self._time, self._seq, self._last, self._depth, self._gone):
            g.append(g.a[0])
        self._records: list[_Record] = []
        self._labels: list[Hashable] = []
        self._live_blocks = 0
        self._clock = 0
        #: Python-level steps taken (trie jumps and new blocks): the
        #: benchmark's measure that work per request follows new tokens
        self.steps = 0

    # -- walking ---------------------------------------------------------------
    def _block(self, mv: memoryview, i: int) -> bytes:
        u = self.unit * _ITEM
        return mv[i * u : (i + 1) * u].tobytes()

    def _walk(self, tokens: array[int]) -> np.ndarray:
        """Node ids of the full blocks of ``tokens`` present in the trie,
        from the root down (ignoring liveness)."""
        mv = memoryview(tokens).cast("B")
        nfull = len(tokens) // self.unit
        parts: list[np.ndarray] = []
        node, i = self.ROOT, 0
        while i < nfull:
            self.steps += 1
            child = self._children.get((node, self._block(mv, i)))
            if child is None:
                break
            # jump along the latest request through this block: its path is
            # the longest known continuation (the creator's may stop short)
            rec = self._records[int(self._last.a[child])]
            m = min(_lcp_from(rec.tokens, tokens, i * self.unit) // self.unit, len(rec.path), nfull)
            seg = rec.path[i:m]
            if seg.size == 0 or seg[0] != child:  # the owner's path was rebuilt after eviction
                seg = np.array([child], dtype=np.int64)
                m = i + 1
            gone = self._gone.a[seg]
            if gone.any():
                cut = int(np.argmax(gone))
                seg = seg[:cut]
                m = i + cut
                if cut == 0:
                    break
            parts.append(seg)
            node, i = int(seg[-1]), m
        if not parts:
            return np.empty(0, dtype=np.int64)
        return np.concatenate(parts)

    def _alive(self, ids: np.ndarray, now: float | None) -> np.ndarray:
        ok: np.ndarray = ~self._gone.a[ids]
        if self.ttl is not None and now is not None:
            ok &= self._time.a[ids] + self.ttl >= now
        return ok

    def longest(self, tokens: array[int], now: float | None) -> tuple[int, Hashable | None]:
        """The longest live common prefix of ``tokens`` with anything stored,
        and the label of the latest request that used it."""
        path = self._walk(tokens)
        k = int(path.size)
        if k:
            alive = self._alive(path, now)
            if not alive.all():
                k = int(np.argmin(alive))  # liveness is a prefix of the path
        node = int(path[k - 1]) if k else self.ROOT
        depth = k * self.unit
        best_node = node if k else None
        # extend into the children of the deepest live block (partial blocks,
        # and full blocks that match only part of the way)
        mv = memoryview(tokens).cast("B")
        rest = mv[depth * _ITEM : (depth + self.unit) * _ITEM].tobytes()
        extra = 0
        if rest:
            for c in self._kids[node]:
                if self._gone.a[c] or (self.ttl is not None and now is not None
                                       and self._time.a[c] + self.ttl < now):
                    continue
                key = self._key[c]
                assert key is not None
                n = _common_bytes(key[1], rest) // _ITEM
                if n > extra:
                    extra, best_node = n, c
        if best_node is None:
            return 0, None
        return depth + extra, self._labels[int(self._last.a[best_node])]

    # -- storing ---------------------------------------------------------------
    def _new_node(self, parent: int, key: bytes, owner: int, index: int) -> int:
        self.steps += 1
        nid = len(self._kids)
        self._kids.append([])
        self._key.append((parent, key))
        self._owner.append(owner)
        self._index.append(index)
        self._time.append(np.inf)
        self._seq.append(0)
        self._last.append(-1)
        self._depth.append(self._depth.a[parent] + 1)
        self._gone.append(False)
        self._kids[parent].append(nid)
        if len(key) == self.unit * _ITEM:
            self._children[(parent, key)] = nid
        self._live_blocks += 1
        return nid

    def store(self, tokens: array[int], now: float | None, label: Hashable) -> None:
        """Write ``tokens`` (a prompt, or a prompt and its reply): every block
        of it is now used by this request at ``now``."""
        self._clock += 1
        rid = len(self._records)
        self._labels.append(label)
        path = self._walk(tokens)
        mv = memoryview(tokens).cast("B")
        nfull = len(tokens) // self.unit
        node = int(path[-1]) if path.size else self.ROOT
        new: list[int] = []
        for i in range(int(path.size), nfull):
            node = self._new_node(node, self._block(mv, i), rid, i)
            new.append(node)
        full = np.concatenate([path, np.array(new, dtype=np.int64)]) if new else path
        touched = full
        tail = len(tokens) - nfull * self.unit
        if tail:
            key = mv[nfull * self.unit * _ITEM :].tobytes()
            leaf = next((c for c in self._kids[node] if self._key[c] == (node, key) and not self._gone.a[c]), None)
            if leaf is None:
                leaf = self._new_node(node, key, rid, nfull)
            touched = np.append(full, leaf)
        self._records.append(_Record(tokens, full, label))
        if touched.size:
            self._time.a[touched] = -np.inf if now is None else now
            self._seq.a[touched] = self._clock
            self._last.a[touched] = rid
        self._evict()

    def _evict(self) -> None:
        if self.capacity is None:
            return
        limit = max(0, self.capacity // self.unit)
        over = self._live_blocks - limit
        if over <= 0:
            return
        n = self._time.n
        ids = np.arange(1, n)
        ids = ids[~self._gone.a[1:n]]
        # least recently used first; among equals the deepest first
        order = np.lexsort((-self._depth.a[ids], self._seq.a[ids]))
        victims = ids[order[:over]]
        for v in victims.tolist():
            self._gone.a[v] = True
            key = self._key[v]
            assert key is not None
            if self._children.get(key) == v:
                del self._children[key]
            self._kids[key[0]].remove(v)
        self._live_blocks -= len(victims)


def _lcp_from(a: array[int], b: array[int], start: int) -> int:
    """Common prefix length of two token arrays known to agree before
    ``start``: numpy compares the rest without copying either array."""
    n = min(len(a), len(b))
    if start >= n:
        return n
    x = np.frombuffer(a, dtype=np.int64, count=n, offset=0)[start:]
    y = np.frombuffer(b, dtype=np.int64, count=n, offset=0)[start:]
    diff = x != y
    at = int(diff.argmax())
    return n if not diff[at] else start + at


def _common_bytes(a: bytes, b: bytes) -> int:
    """Common prefix of two byte strings, rounded down to whole tokens."""
    n = min(len(a), len(b))
    if a[:n] == b[:n]:
        return n - n % _ITEM
    lo, hi = 0, n
    while lo < hi:  # binary search on equal prefixes (C comparisons)
        mid = (lo + hi + 1) // 2
        if a[:mid] == b[:mid]:
            lo = mid
        else:
            hi = mid - 1
    return lo - lo % _ITEM


