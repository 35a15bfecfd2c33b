"""First release whose verdict differs, by bisection over a release list:
``signature(version)`` is whatever a release is judged by, and the releases
from ``good`` up to the change are assumed to share ``good``'s."""

from __future__ import annotations

from collections.abc import Callable, Hashable, Sequence

from ..errors import FidelityError

__all__ = ["first_change"]


def first_change(releases: Sequence[str], good: str, bad: str,
                 signature: Callable[[str], Hashable]) -> tuple[str | None, int]:
    """``(first release after good whose signature differs from good's, number
    of releases judged)``; ``(None, n)`` when ``bad`` judges like ``good``."""
    for v in (good, bad):
        if v not in releases:
            raise FidelityError(f"release {v} is not in the registry's list")
    lo, hi = releases.index(good), releases.index(bad)
    if lo >= hi:
        raise FidelityError(f"--good {good} must be an older release than --bad {bad}")
    memo: dict[str, Hashable] = {}

    def sig(i: int) -> Hashable:
        v = releases[i]
        if v not in memo:
            memo[v] = signature(v)
        return memo[v]

    base = sig(lo)
    if sig(hi) == base:
        return None, len(memo)
    while hi - lo > 1:  # invariant: sig(lo) == base != sig(hi)
        mid = (lo + hi) // 2
        if sig(mid) == base:
            lo = mid
        else:
            hi = mid
    return releases[hi], len(memo)
