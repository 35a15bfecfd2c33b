"""DeepSeek context caching on disk (automatic)."""

from __future__ import annotations

from typing import Sequence

from ._base import CacheModel, CacheOutcome, PromptTokens, common_prefix

#: Fixed interval (tokens) at which DeepSeek persists cache prefix units.
#: 64 is the storage unit of DeepSeek's earlier caching guide ("the cache
#: system uses 64 tokens as a storage unit; content less than 64 tokens will
#: not be cached"). The current guide says "fixed token intervals" without a
#: number. The one recorded fork in ../shared/real (parent 2885 tokens,
#: child 2913, child read 2816 = 44*64 = 11*256) fits 64 only if parent and
#: child diverge at least 5 tokens before the parent's end; see
#: docs/tokens-cache-prices.md. The calibration step may tune this constant.
DEEPSEEK_UNIT = 64


class DeepSeekCache(CacheModel):
    """DeepSeek API context caching on disk.

    Rules (https://api-docs.deepseek.com/guides/kv_cache, "Cache Persistence
    and Hit Rules"): a request hits only a *persisted cache prefix unit* that
    it matches completely, counted from token 0. Units are persisted

    1. at request boundaries: the end of the user input (the whole prompt)
       and the end of the model output (prompt + reply);
    2. at a common prefix detected between earlier requests (A+B then A+C
       persists A, so a third request A+D hits A);
    3. at fixed token intervals inside long inputs and outputs
       (``DEEPSEEK_UNIT``).

    Units shorter than one interval are not cached. No lifetime is
    documented (the earlier guide: unused caches are cleared "within a few
    hours to a few days"); ``ttl`` is None. Hits are billed at the cache-hit
    price (about 0.1x-0.2x of input, see the price table); no write fee.
    """

    name = "deepseek"
    provider = "deepseek"
    unit = DEEPSEEK_UNIT
    includes_output = True
    ttl: float | None = None
    read_multiplier = 0.1
    write_multiplier = 1.0

    def reusable(self, common_prefix: int, prompt_len: int) -> int:
        """Interval units only (a request-boundary unit needs the whole
        earlier request, which :meth:`predict` checks)."""
        usable = min(common_prefix, prompt_len)
        return usable // self.unit * self.unit

    def _units(self, prior: PromptTokens) -> list[tuple[tuple[int, ...], int]]:
        units: list[tuple[tuple[int, ...], int]] = [(prior.tokens, len(prior.tokens))]
        if prior.output:
            stored = prior.stored
            units.append((stored, len(stored)))
        return units

    def predict(self, earlier: Sequence[PromptTokens], request: PromptTokens) -> CacheOutcome:
        n = len(request.tokens)
        live = [p for p in earlier if self.alive(p.time, request.time) and p.time <= request.time]
        best = 0
        for prior in live:
            stored = prior.stored
            shared = common_prefix(stored, request.tokens)
            # 3. interval units inside the earlier sequence
            best = max(best, self.reusable(min(shared, len(stored)), n))
            # 1. request-boundary units, matched completely
            for _, length in self._units(prior):
                if length >= self.unit and shared >= length and length <= n:
                    best = max(best, length)
        # 2. common prefixes between pairs of earlier requests
        ordered = sorted(live, key=lambda p: p.time)
        for i, first in enumerate(ordered):
            for second in ordered[i + 1 :]:
                pair = common_prefix(first.stored, second.stored)
                if pair >= self.unit and pair <= n and common_prefix(second.stored, request.tokens) >= pair:
                    best = max(best, pair)
        best = min(best, n)
        stored_units = n if n >= self.unit else 0
        return CacheOutcome(cached=best, written=max(0, stored_units - best), uncached=n - best)
