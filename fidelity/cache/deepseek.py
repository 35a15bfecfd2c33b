"""DeepSeek context caching on disk (automatic), as calibrated on real usage."""

from __future__ import annotations

from ._base import CacheModel

__all__ = ["DEEPSEEK_UNIT", "DeepSeekCache"]

#: Fixed interval (tokens) at which DeepSeek persists cache prefix units.
#: Calibrated on real usage (docs/calibration.md, rule 1): every one of the
#: 48 non-zero ``cacheReadTokens`` recorded against ``deepseek-v4-flash`` is
#: a multiple of 128, and 23 of them are odd multiples of 128, so neither 64
#: (the storage unit of DeepSeek's earlier caching guide, under which half
#: the hits would be odd multiples of 64) nor 256 fits. The current guide
#: says "fixed token intervals" without a number.
DEEPSEEK_UNIT = 128


class DeepSeekCache(CacheModel):
    """DeepSeek API context caching on disk, as calibrated on real usage.

    Rule: a request reads the longest prefix it shares with an earlier
    request's prompt followed by that request's reply
    (``PromptTokens.stored``), counted from token 0 and rounded *down* to
    whole ``DEEPSEEK_UNIT`` (128-token) units. Shared tokens past the last
    whole unit are billed as misses.

    Documentation: https://api-docs.deepseek.com/guides/kv_cache ("Cache
    Persistence and Hit Rules": only a repeated prefix hits; units are
    persisted at fixed token intervals, at request boundaries and at common
    prefixes detected between requests). Evidence from 53 requests of 39
    DeepSeek Harness logs with a DeepSeek cache report (docs/calibration.md,
    ``fidelity calibrate ../shared/real/deepseek-harness``):

    1. unit 128: all 48 non-zero hits are multiples of 128 (23 odd
       multiples); the recorded fork child reads 2816 = 22 x 128 of a
       2884-token shared prefix;
    2. no whole-request units: tool rounds repeated the previous prompt and
       reply completely and DeepSeek still served only whole units (5441 +
       872 = 6313 shared, 6272 served), so the documented request-boundary
       and pairwise common-prefix units are not modelled;
    3. the reply is cacheable prefix after its prompt (a tool round's next
       request reads past the previous prompt; 6272 read after a 5441-token
       prompt and an 872-token reply).

    With these rules 31 of the 33 requests the sessions themselves can
    explain are predicted exactly (93.9 %) and 2 over-predicted, each by one
    unit; the previous model (64-token unit, request-boundary and pairwise
    units) over-predicted 31 of 53. No lifetime is documented (the earlier
    guide: unused caches are cleared "within a few hours to a few days");
    ``ttl`` is None. Hits are billed at the cache-hit price (about 0.1x of
    input, see the price table); no write fee.
    """

    name = "deepseek"
    provider = "deepseek"
    unit = DEEPSEEK_UNIT
    includes_output = True
    ttl: float | None = None
    read_multiplier = 0.1
    write_multiplier = 1.0

    # predict: CacheModel.predict (includes_output: earlier prompts are read
    # with their replies; what a request stores is its whole units)

    def reusable(self, common_prefix: int, prompt_len: int) -> int:
        """Whole units of the shared prefix (no request-boundary units)."""
        usable = min(common_prefix, prompt_len)
        return usable // self.unit * self.unit
