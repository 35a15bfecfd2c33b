"""First divergent byte of two byte strings (or character of two strings), at
memory speed: ``startswith`` over fixed-size windows, then bisection of the
first window that differs (``bytes.startswith`` takes a memoryview: no copies).
"""

from __future__ import annotations

from typing import Any

__all__ = ["first_divergence", "excerpt"]

_WINDOW = 1 << 20


def first_divergence(a: bytes | str, b: bytes | str) -> int | None:
    """Index of the first byte (character) where ``a`` and ``b``, both bytes
    or both str, differ; ``None`` when they are identical; when one is a
    proper prefix of the other, the length of the shorter one.

    >>> first_divergence(b"abcdef", b"abcxef")
    3
    >>> first_divergence(b"abc", b"abcdef")
    3
    >>> first_divergence(b"same", b"same") is None
    True
    """
    if a == b:
        return None
    n = min(len(a), len(b))
    mb: Any = memoryview(b) if isinstance(b, bytes) else b
    start = 0
    # Find the first window that differs.
    while start < n:
        end = min(start + _WINDOW, n)
        if not a.startswith(mb[start:end], start):
            break
        start = end
    else:
        return n
    lo, hi = start, min(start + _WINDOW, n)
    # Invariant: a[:lo] == b[:lo] and a[lo:hi] != b[lo:hi].
    while hi - lo > 1:
        mid = (lo + hi) // 2
        if a.startswith(mb[lo:mid], lo):
            lo = mid
        else:
            hi = mid
    return lo


def excerpt(data: bytes, at: int, width: int = 80) -> str:
    """Up to ``width`` bytes either side of ``at``, escaped for one line of
    output (non-printable and non-ASCII bytes as ``\\xNN``), with ``…`` where
    the excerpt is cut. A marker ``⟨here⟩`` sits at ``at``."""
    lo, hi = max(0, at - width), min(len(data), at + width)
    head = _escape(data[lo:at])
    tail = _escape(data[at:hi])
    return ("…" if lo > 0 else "") + head + "⟨here⟩" + tail + ("…" if hi < len(data) else "")


def _escape(chunk: bytes) -> str:
    text = chunk.decode("utf-8", "backslashreplace")
    return text.encode("unicode_escape").decode("ascii") if not text.isprintable() else text
