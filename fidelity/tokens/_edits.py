"""Encode an edited text from the ids of the text it was edited from:
:class:`RecentTexts` finds a recent long text sharing its head or tail and
encodes only around the change, cut at *edit boundaries* (a space after an
ASCII letter, where ids split for ``_bpe.EDIT_SAFE_PATTERNS`` and DeepSeek's).
Why that is exact: docs/tokens-cache-prices.md, "Edited text".
"""

from __future__ import annotations

import re
import threading
from array import array
from collections.abc import Callable, Iterable

from ..bytediff import first_divergence

__all__ = ["EDIT_MIN_CHARS", "RecentTexts", "boundaries_safe"]

#: texts shorter than this are encoded whole (the look-up would cost about as much)
EDIT_MIN_CHARS = 512
#: characters of a text's head and tail it is found by
_KEY_CHARS = 32
#: texts remembered per tokenizer (by head and by tail)
_KEEP = 64
#: how far from the change an edit boundary is looked for (further: encoded with the change)
_WINDOW = 4096

_BOUNDARY = re.compile(r"(?<=[A-Za-z]) ")
_LETTER_SPACE = re.compile(r"[A-Za-z] ")


def boundaries_safe(specials: Iterable[str]) -> bool:
    """Whether no special token holds a letter followed by a space."""
    return not any(_LETTER_SPACE.search(s) for s in specials)


def _last_boundary(text: str, end: int) -> int:
    """The largest edit boundary ``b < end`` (its letter and space before
    ``end``) within :data:`_WINDOW` characters; 0 when there is none."""
    last = 0
    for m in _BOUNDARY.finditer(text, max(0, end - _WINDOW), end):
        last = m.start()
    return last


def _first_boundary(text: str, start: int) -> int:
    """The smallest edit boundary ``b > start`` (its letter at ``start`` or
    after) within :data:`_WINDOW` characters; ``len(text)`` when there is none."""
    m = _BOUNDARY.search(text, start + 1, start + 1 + _WINDOW)
    return m.start() if m is not None else len(text)


def _tail_len(a: str, b: str, n: int) -> int:
    """How many trailing characters ``a`` and ``b`` share, at most ``n``."""
    la, lb = len(a), len(b)
    if a.endswith(b[lb - n:]):
        return n
    lo, hi = 0, n
    while hi - lo > 1:
        mid = (lo + hi) // 2
        if a.endswith(b[lb - mid:lb - lo], 0, la - lo):
            lo = mid
        else:
            hi = mid
    return lo


class RecentTexts:
    """The last long texts one tokenizer encoded, with their ids, found by
    head or tail. Thread-safe (a tokenizer may encode on several threads)."""

    def __init__(self) -> None:
        self._by_head: dict[str, tuple[str, array[int]]] = {}
        self._by_tail: dict[str, tuple[str, array[int]]] = {}
        self._lock = threading.Lock()
        #: texts encoded around an edit / whole (of at least EDIT_MIN_CHARS)
        self.edited = 0
        self.whole = 0

    def encode(self, text: str, encode: Callable[[str], array[int]]) -> array[int]:
        """The ids of ``text`` (``encode`` gives a text's ids): around what
        changed when a recent text shares its head or tail, else whole."""
        head, tail = text[:_KEY_CHARS], text[-_KEY_CHARS:]
        with self._lock:
            found = [c for c in (self._by_head.get(head), self._by_tail.get(tail)) if c is not None]
        ids = None
        best = None
        for old, old_ids in found:
            p = first_divergence(old, text)
            p = len(text) if p is None else p
            s = _tail_len(old, text, min(len(old), len(text)) - p)
            if best is None or p + s > best[0] + best[1]:
                best = (p, s, old, old_ids)
        if best is not None:
            ids = _edited(text, *best, encode)
        if ids is None:
            ids = encode(text)
            self.whole += 1
        else:
            self.edited += 1
        with self._lock:
            for memo, key in ((self._by_head, head), (self._by_tail, tail)):
                memo.pop(key, None)
                memo[key] = (text, ids)
                if len(memo) > _KEEP:
                    del memo[next(iter(memo))]
        return ids


def _edited(text: str, p: int, s: int, old: str, old_ids: array[int],
            encode: Callable[[str], array[int]]) -> array[int] | None:
    """``text``'s ids from ``old``'s, which shares its first ``p`` and last
    ``s`` characters with it (``p + s`` at most either's length); ``None``
    when that would not save at least half the work."""
    if 2 * (p + s) < len(text):  # the change alone is more than half: no boundary can help
        return None
    b1 = _last_boundary(old, p) if p else 0
    b2 = _first_boundary(old, len(old) - s) if s else len(old)
    b2_new = b2 + len(text) - len(old)
    side = min(b1, len(old) - b2)
    if (b2 - b1) + (b2_new - b1) + side > len(text) // 2:
        return None
    mid_old = encode(old[b1:b2])
    if b1 <= len(old) - b2:
        n_head = len(encode(old[:b1])) if b1 else 0
        n_tail = len(old_ids) - n_head - len(mid_old)
    else:
        n_tail = len(encode(old[b2:])) if b2 < len(old) else 0
        n_head = len(old_ids) - n_tail - len(mid_old)
    if n_head < 0 or n_tail < 0:  # not a split of old's ids: cannot happen for a safe tokenizer
        return None
    out = array(old_ids.typecode, old_ids[:n_head])
    out.extend(encode(text[b1:b2_new]))
    out.extend(old_ids[len(old_ids) - n_tail:])
    return out
