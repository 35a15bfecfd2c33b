"""Tokenize each unique segment once: a content memo with a memory cap.

A scan sees the same history again and again (each request re-sends the
previous one), so token ids are memoised per (tokenizer, segment bytes). The
dict hashes the bytes (SipHash, in C) and compares them on a hit: repeated
history costs a hash, not a tokenizer pass. The memo is per process (one per
worker) and bounded by the bytes it holds; the least recently used entries
go first.
"""

from __future__ import annotations

from array import array

from .. import tokens

__all__ = ["TokenMemo"]


class TokenMemo:
    """Token ids of segment bytes, per tokenizer, at most ``max_bytes`` of
    segments (and their ids) held; the oldest entries go first (a partition
    keeps the ids of the segments it holds, so a hot segment evicted here
    costs one more tokenizer pass at most per partition). ``hits`` /
    ``misses`` count lookups."""

    def __init__(self, max_bytes: int = 256 * 1024 * 1024) -> None:
        self.max_bytes = max_bytes
        self._memo: dict[tuple[str, bytes], array[int]] = {}
        self._size = 0
        self.hits = 0
        self.misses = 0
        self.tokenized_bytes = 0

    def ids(self, tokenizer: tokens.Tokenizer, data: bytes) -> array[int]:
        """Token ids of ``data`` (decoded as UTF-8, invalid bytes as U+FFFD);
        read-only, shared with the memo."""
        key = (tokenizer.name, data)
        hit = self._memo.get(key)
        if hit is not None:
            self.hits += 1
            return hit
        self.misses += 1
        self.tokenized_bytes += len(data)
        ids = tokenizer.ids(data.decode("utf-8", "replace"))
        if not isinstance(ids, array):
            ids = array(tokens.TOKEN_TYPECODE, ids)
        cost = len(data) + 8 * len(ids) + 64
        if cost <= self.max_bytes // 4:
            self._memo[key] = ids
            self._size += cost
            while self._size > self.max_bytes:
                (_, d) = oldest = next(iter(self._memo))
                old = self._memo.pop(oldest)
                self._size -= len(d) + 8 * len(old) + 64
        return ids

    def get(self, key: tuple[str, bytes]) -> array[int] | None:
        """The ids stored under ``key`` (``(tokenizer name, bytes)``), or ``None``."""
        hit = self._memo.get(key)
        if hit is not None:
            self.hits += 1
        else:
            self.misses += 1
        return hit

    def put(self, key: tuple[str, bytes], ids: array[int], nbytes: int) -> None:
        """Store ids computed by the caller for ``nbytes`` of input (counted
        as tokenized); the same cap as :meth:`ids`."""
        self.tokenized_bytes += nbytes
        cost = len(key[1]) + 8 * len(ids) + 64
        if cost <= self.max_bytes // 4:
            self._memo[key] = ids
            self._size += cost
            while self._size > self.max_bytes:
                (_, d) = oldest = next(iter(self._memo))
                old = self._memo.pop(oldest)
                self._size -= len(d) + 8 * len(old) + 64

    @property
    def size(self) -> int:
        return self._size
