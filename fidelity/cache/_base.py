"""Shared types and the prefix-cache base class of the cache models.

A cache model answers one question: given the requests sent earlier (token
sequences with send times) and this request, how many of this request's
prompt tokens are read from the cache (``cached``), how many are newly
stored by it (``written``), and how many are computed at full price
(``uncached``)? A live probe reports the same three numbers, so a prediction
and a measurement compare directly.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Sequence

from ..errors import InputError


@dataclass(frozen=True)
class PromptTokens:
    """One request's prompt as its provider tokenizes it.

    ``breakpoints``: token offsets that end an explicit ``cache_control``
    block (Anthropic, DashScope explicit), at most 4. ``ttls``: seconds each
    breakpoint's entry lives (empty: the model's default). ``blocks``: token
    offsets that end every content block (for Anthropic's 20-block lookback;
    empty: only the breakpoints are known block ends). ``output``: tokens the
    model generated in reply, which engines and DeepSeek keep in the cache
    after the prompt (empty when unknown).
    """

    tokens: tuple[int, ...]
    time: float = 0.0
    breakpoints: tuple[int, ...] = ()
    ttls: tuple[float, ...] = ()
    blocks: tuple[int, ...] = ()
    output: tuple[int, ...] = ()

    def __post_init__(self) -> None:
        for name in ("tokens", "breakpoints", "ttls", "blocks", "output"):
            value = getattr(self, name)
            if not isinstance(value, tuple):
                object.__setattr__(self, name, tuple(value))
        n = len(self.tokens)
        for name in ("breakpoints", "blocks"):
            for offset in getattr(self, name):
                if not 0 < offset <= n:
                    raise InputError(f"{name} offset {offset} outside the prompt (1..{n})", pointer=f"/{name}")
        if self.ttls and len(self.ttls) != len(self.breakpoints):
            raise InputError(f"{len(self.ttls)} ttls for {len(self.breakpoints)} breakpoints", pointer="/ttls")

    def __len__(self) -> int:
        return len(self.tokens)

    @property
    def stored(self) -> tuple[int, ...]:
        """Prompt followed by output: what an engine's KV cache holds after it."""
        return self.tokens + self.output if self.output else self.tokens


@dataclass(frozen=True)
class CacheOutcome:
    """Prompt tokens read from cache, newly written to it, and computed.

    ``cached + uncached == prompt length``; ``written`` counts the uncached
    tokens this request stored for later requests (billed at the model's
    ``write_multiplier`` where the provider bills writes).
    """

    cached: int
    written: int
    uncached: int

    @property
    def total(self) -> int:
        return self.cached + self.uncached


def common_prefix(a: Sequence[int], b: Sequence[int]) -> int:
    """Length of the longest common prefix of two token sequences.

    Compares slices (C speed) in blocks, then bisects inside the first
    differing block: linear in the prefix length, no Python loop per token.
    """
    n = min(len(a), len(b))
    if isinstance(a, tuple) is False:
        a = tuple(a)
    if isinstance(b, tuple) is False:
        b = tuple(b)
    step = 4096
    lo = 0
    while lo < n:
        hi = min(n, lo + step)
        if a[lo:hi] != b[lo:hi]:
            # bisect within [lo, hi): first index where they differ
            left, right = lo, hi
            while right - left > 1:
                mid = (left + right) // 2
                if a[left:mid] == b[left:mid]:
                    left = mid
                else:
                    right = mid
            return left
        lo = hi
    return n


class CacheModel:
    """Base of every cache model. Subclasses set the class attributes and
    implement :meth:`reusable`; providers with explicit breakpoints override
    :meth:`predict`.

    ``read_multiplier`` / ``write_multiplier``: price of a cached / written
    token relative to the input price (used by cost when the price table has
    no explicit cache price). ``ttl``: seconds an entry lives after its last
    use (``None``: no time limit, evicted only under memory pressure).
    ``includes_output``: whether the reply's tokens stay in the cache after
    the prompt (self-hosted engines, DeepSeek).
    """

    name: str = ""
    provider: str = ""
    doc: str = ""
    estimated_rules: bool = False
    read_multiplier: float = 1.0
    write_multiplier: float = 1.0
    ttl: float | None = None
    includes_output: bool = False

    def __init__(self, **overrides: object) -> None:
        for key, value in overrides.items():
            if not hasattr(type(self), key):
                raise TypeError(f"{type(self).__name__} has no setting {key!r}")
            setattr(self, key, value)
        if not self.doc:
            self.doc = (type(self).__doc__ or "").strip()

    def __repr__(self) -> str:
        return f"<CacheModel {self.name}>"

    # -- rules --------------------------------------------------------------
    def reusable(self, common_prefix: int, prompt_len: int) -> int:
        """Tokens of a shared prefix of ``common_prefix`` tokens that the
        cache can serve to a prompt of ``prompt_len`` tokens."""
        raise NotImplementedError

    def alive(self, entry_time: float, now: float) -> bool:
        """An entry last used at ``entry_time`` still hits at ``now``."""
        return self.ttl is None or now - entry_time <= self.ttl

    # -- prediction ---------------------------------------------------------
    def predict(self, earlier: Sequence[PromptTokens], request: PromptTokens) -> CacheOutcome:
        """Cached, written and uncached tokens of ``request`` given the
        requests sent before it (any order; only unexpired ones count).

        A later request that shares a prefix holds those tokens at its own
        time, so reading an entry refreshes it without extra bookkeeping.
        """
        n = len(request.tokens)
        best = 0
        for prior in earlier:
            if not self.alive(prior.time, request.time):
                continue
            source = prior.stored if self.includes_output else prior.tokens
            shared = common_prefix(source, request.tokens)
            best = max(best, self.reusable(shared, n))
        best = min(best, n)
        stored = min(n, self.reusable(n, n + 1))
        return CacheOutcome(cached=best, written=max(0, stored - best), uncached=n - best)
