"""Explicit ``cache_control`` breakpoints with block lookback.

Shared by Anthropic and DashScope's explicit cache, which document the same
mechanism: each breakpoint writes the prefix ending at it; a later request
reads, for each of its breakpoints, the longest stored prefix that ends at
that breakpoint or at one of the ``lookback`` content blocks before it.
"""

from __future__ import annotations

from typing import Protocol

from ..errors import InputError
from ._base import CacheModel

__all__ = ["BreakpointCache"]


class _HasBreakpoints(Protocol):
    """What :meth:`BreakpointCache._check` and :meth:`BreakpointCache.marker_ttls`
    read: a simulator ``SimRequest``."""

    @property
    def breakpoints(self) -> tuple[int, ...]: ...

    @property
    def ttls(self) -> tuple[float, ...]: ...


#: the longest lifetime a ``cache_control`` marker can ask for: Anthropic
#: documents ``"5m"`` and ``"1h"`` (``fidelity.cache.assemble.ttl_seconds``)
LONGEST_MARKER_TTL = 3600.0


class BreakpointCache(CacheModel):
    """Base for explicit-breakpoint caches (see module docstring)."""

    minimum: int = 1024
    max_breakpoints: int = 4
    lookback: int = 20
    ttl: float | None = 300.0
    #: write price multiplier per entry lifetime in seconds
    write_multipliers: dict[float, float] = {}

    def longest_ttl(self) -> float | None:
        """A breakpoint may ask for a longer life than :attr:`ttl`:
        ``"ttl": "1h"`` (:data:`LONGEST_MARKER_TTL`)."""
        return None if self.ttl is None else max(self.ttl, LONGEST_MARKER_TTL)

    def marker_ttls(self, request: _HasBreakpoints) -> tuple[float, ...]:
        """The lifetime of each breakpoint's entry: its marker's, else :attr:`ttl`."""
        default = self.ttl if self.ttl is not None else float("inf")
        return request.ttls or tuple(default for _ in request.breakpoints)

    def _check(self, request: _HasBreakpoints) -> None:
        if len(request.breakpoints) > self.max_breakpoints:
            raise InputError(
                f"{len(request.breakpoints)} cache_control breakpoints; {self.name} allows at most {self.max_breakpoints}",
                pointer="/breakpoints",
            )
