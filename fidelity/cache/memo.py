"""Tokenize each unique element once: a per-process memo of billed token
ids keyed by an element's canonical bytes and what else its ids depend on
(dialect, model, context), bounded by the bytes it holds (least recently
used entries go first).
"""

from __future__ import annotations

from collections.abc import Hashable
from typing import Any

__all__ = ["TokenMemo"]


class TokenMemo:
    """Values by key, at most ``max_bytes`` of them held (each entry's
    ``cost``, as the caller counts it), the least recently used going first.
    ``hits`` / ``misses`` count lookups; ``tokenized_bytes`` the input bytes
    tokenized for the entries."""

    def __init__(self, max_bytes: int = 256 * 1024 * 1024) -> None:
        self.max_bytes = max_bytes
        self._memo: dict[Hashable, tuple[Any, int, Hashable]] = {}
        self._size = 0
        self.hits = 0
        self.misses = 0
        self.tokenized_bytes = 0

    def get(self, key: Hashable) -> Any:
        """The value stored under ``key`` (now the most recently used), or ``None``."""
        memo = self._memo
        hit = memo.pop(key, None)
        if hit is None:
            self.misses += 1
            return None
        # re-inserted (dicts keep insertion order, so the oldest come first)
        # under the key it was stored with: the caller's equal key may hold
        # bytes in a larger allocation (orjson's: :func:`.view.trimmed`)
        memo[hit[2]] = hit
        self.hits += 1
        return hit[0]

    def put(self, key: Hashable, value: Any, cost: int, nbytes: int = 0) -> None:
        """Store ``value`` (``cost`` bytes held, ``nbytes`` of input
        tokenized for it); an entry over a quarter of the cap is not kept."""
        self.tokenized_bytes += nbytes
        if cost > self.max_bytes // 4 or key in self._memo:
            return
        self._memo[key] = (value, cost, key)
        self._size += cost
        while self._size > self.max_bytes:
            oldest = next(iter(self._memo))
            self._size -= self._memo.pop(oldest)[1]
