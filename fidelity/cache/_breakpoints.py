"""Explicit ``cache_control`` breakpoints with block lookback.

Shared by Anthropic and DashScope's explicit cache, which document the same
mechanism: each breakpoint writes the prefix ending at it; a later request
reads, for each of its breakpoints, the longest stored prefix that ends at
that breakpoint or at one of the ``lookback`` content blocks before it.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol

from ..errors import InputError
from ._base import CacheModel, CacheOutcome, PromptTokens, common_prefix

__all__ = ["BreakpointCache"]


class _HasBreakpoints(Protocol):
    """What :meth:`BreakpointCache._check` and :meth:`BreakpointCache.marker_ttls`
    read: a ``PromptTokens`` or a simulator ``SimRequest``."""

    @property
    def breakpoints(self) -> tuple[int, ...]: ...

    @property
    def ttls(self) -> tuple[float, ...]: ...


#: the longest lifetime a ``cache_control`` marker can ask for: Anthropic
#: documents ``"5m"`` and ``"1h"`` (``fidelity.cache.assemble.ttl_seconds``)
LONGEST_MARKER_TTL = 3600.0


@dataclass
class _Entry:
    source: PromptTokens
    length: int
    last_used: float
    ttl: float


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

    def reusable(self, common_prefix: int, prompt_len: int) -> int:
        """Upper bound without block information: a breakpoint at the end of
        the shared prefix would serve all of it when it reaches the minimum."""
        usable = min(common_prefix, prompt_len)
        return usable if usable >= self.minimum else 0

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

    def _hit(self, entries: list[_Entry], request: PromptTokens, now: float) -> tuple[int, _Entry | None]:
        """Longest live entry that ends at a lookback position of one of the
        request's breakpoints and matches its tokens up to there."""
        ends = sorted(set(request.blocks) | set(request.breakpoints))
        candidates: set[int] = set()
        for bp in request.breakpoints:
            before = [e for e in ends if e <= bp]
            candidates.update(before[-(self.lookback + 1):])  # the breakpoint and up to `lookback` blocks before
        shared: dict[int, int] = {}
        best, best_entry = 0, None
        for entry in entries:
            if entry.length not in candidates or entry.length <= best:
                continue
            if now - entry.last_used > entry.ttl:
                continue
            key = id(entry.source)
            if key not in shared:
                shared[key] = common_prefix(entry.source.tokens, request.tokens)
            if shared[key] >= entry.length:
                best, best_entry = entry.length, entry
        return best, best_entry

    def _replay(self, earlier: Sequence[PromptTokens], until: float) -> list[_Entry]:
        """Entries written by the earlier requests, in time order, with each
        read refreshing the entry it hit (TTL "refreshed for no additional
        cost each time the cached content is used")."""
        entries: list[_Entry] = []
        for prior in sorted(earlier, key=lambda p: p.time):
            if prior.time > until:
                continue
            _, hit = self._hit(entries, prior, prior.time)
            if hit is not None:
                hit.last_used = prior.time
            for bp, ttl in zip(prior.breakpoints, self.marker_ttls(prior)):
                if bp >= self.minimum:
                    entries.append(_Entry(prior, bp, prior.time, ttl))
        return entries

    def predict(self, earlier: Sequence[PromptTokens], request: PromptTokens) -> CacheOutcome:
        self._check(request)
        n = len(request.tokens)
        entries = self._replay(earlier, request.time)
        cached, _ = self._hit(entries, request, request.time)
        writable = [bp for bp in request.breakpoints if bp >= self.minimum]
        last = max(writable, default=0)
        return CacheOutcome(cached=cached, written=max(0, last - cached), uncached=n - cached)

    def write_multiplier_for(self, ttl: float) -> float:
        """Write price multiplier for an entry that lives ``ttl`` seconds."""
        return self.write_multipliers.get(ttl, self.write_multiplier)
