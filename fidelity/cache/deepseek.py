"""DeepSeek context caching on disk (automatic), as calibrated on real usage."""

from __future__ import annotations

from ._base import CacheModel

__all__ = ["DEEPSEEK_UNIT", "DeepSeekCache"]

#: Fixed interval (tokens) at which DeepSeek persists cache prefix units,
#: calibrated on recorded usage (docs/calibration.md, rule 1; the guide
#: says "fixed token intervals" without a number).
DEEPSEEK_UNIT = 128


class DeepSeekCache(CacheModel):
    """DeepSeek API context caching on disk, as calibrated on real usage.

    A request reads the longest prefix it shares with an earlier request's
    prompt followed by that request's reply (``includes_output``), from
    token 0, rounded down to whole ``DEEPSEEK_UNIT`` units; no
    request-boundary or pairwise units, no documented lifetime, no write fee.
    Source: https://api-docs.deepseek.com/guides/kv_cache ("Cache Persistence
    and Hit Rules"); the evidence for each rule: docs/calibration.md.
    """

    name = "deepseek"
    provider = "deepseek"
    unit = DEEPSEEK_UNIT
    includes_output = True
    ttl: float | None = None
    read_multiplier = 0.1
    write_multiplier = 1.0

    def reusable(self, common_prefix: int, prompt_len: int) -> int:
        """Whole units of the shared prefix (no request-boundary units)."""
        usable = min(common_prefix, prompt_len)
        return usable // self.unit * self.unit
