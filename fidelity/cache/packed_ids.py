"""Packed token ids (``array('q')`` bytes, 8 per id) and the C-speed
comparisons :class:`~fidelity.cache.prefix_store.PrefixStore` walks with."""

from __future__ import annotations

from typing import Any

from ._base import as_token_array

__all__ = ["ITEM", "token_bytes_or_array", "packed", "agreeing_blocks", "first_id", "common_tokens"]

ITEM = 8  # bytes per packed token id (array('q'))

def token_bytes_or_array(ids: Any) -> Any:
    """``ids`` as ``bytes`` (kept) or ``array('q')`` (kept when it is one)."""
    return ids if isinstance(ids, bytes) else as_token_array(ids)


def packed(ids: Any) -> bytes:
    """Packed ids as ``bytes`` (an ``array('q')`` is copied; ``bytes`` are
    used as they are)."""
    return ids if isinstance(ids, bytes) else memoryview(ids).cast("B").tobytes()


def agreeing_blocks(req: bytes, rec: memoryview, start: int, avail: int, u: int) -> int:
    """How many of the ``avail`` blocks of ``u`` bytes from byte ``start``
    agree between ``req`` and ``rec`` (0: not even the first): a ``memcmp``
    over all, then the first alone, then by halving the range in doubt."""
    avail = min(avail, (len(rec) - start) // u)  # never read past the record
    if req.startswith(rec[start : start + avail * u], start):
        return avail
    if not req.startswith(rec[start : start + u], start):
        return 0
    lo, hi = 1, avail - 1  # blocks [0, lo) agree; the answer lies in [lo, hi]
    while lo < hi:
        mid = (lo + hi + 1) // 2
        if req.startswith(rec[start + lo * u : start + mid * u], start + lo * u):
            lo = mid
        else:
            hi = mid - 1
    return lo


def first_id(block: bytes) -> int:
    """The first token id of packed ids (a trie node's first id)."""
    return int.from_bytes(block[:ITEM], "little", signed=True)


def common_tokens(a: bytes, b: bytes) -> int:
    """Common prefix of two packed id strings (a block or less), in whole
    tokens: one ``memcmp``, else the lowest set bit of their XOR."""
    n = min(len(a), len(b))
    if a.startswith(memoryview(b)[:n]):
        return n // ITEM
    x = int.from_bytes(a[:n], "little") ^ int.from_bytes(b[:n], "little")
    return ((x & -x).bit_length() - 1) // (8 * ITEM)  # first differing bit, in tokens
