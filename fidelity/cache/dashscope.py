"""Alibaba Cloud Model Studio (DashScope) context cache: implicit and explicit."""

from __future__ import annotations

from ._base import CacheModel
from ._breakpoints import BreakpointCache

__all__ = ["DashScopeImplicitCache", "DashScopeExplicitCache"]


class DashScopeImplicitCache(CacheModel):
    """DashScope implicit cache (automatic, cannot be disabled).

    Rules (https://www.alibabacloud.com/help/en/model-studio/context-cache,
    table "Explicit cache / Implicit cache"): the system caches common
    prefixes automatically, hits are not guaranteed; minimum 256 tokens;
    cached tokens billed at 20% of input, creation at 100% (no surcharge);
    lifetime not guaranteed ("the system periodically clears unused cached
    data"), modelled as 5 minutes. The Chinese page
    (https://help.aliyun.com/zh/model-studio/context-cache) now states a
    1024-token minimum for both modes: pass ``minimum=1024`` to follow it.
    """

    name = "dashscope"
    provider = "dashscope"
    minimum = 256
    ttl = 300.0
    read_multiplier = 0.2
    write_multiplier = 1.0

    def reusable(self, common_prefix: int, prompt_len: int) -> int:
        usable = min(common_prefix, prompt_len)
        return usable if usable >= self.minimum else 0


class DashScopeExplicitCache(BreakpointCache):
    """DashScope explicit cache (``cache_control: {"type": "ephemeral"}``).

    Rules (https://www.alibabacloud.com/help/en/model-studio/context-cache,
    "Explicit cache"; https://help.aliyun.com/zh/model-studio/context-cache
    spells out the lookback): each marker ends a cache block
    written from the start of ``messages``; the system looks back at most 20
    content blocks from each marker and reads the longest matching prefix;
    at most 4 markers per request; a block must hold at least 1024 tokens;
    valid 5 minutes, reset on each hit. Creation billed at 125% of input,
    hits at 10%. Explicit and implicit caching are mutually exclusive per
    request.
    """

    name = "dashscope-explicit"
    provider = "dashscope"
    minimum = 1024
    max_breakpoints = 4
    lookback = 20
    ttl = 300.0
    read_multiplier = 0.1
    write_multiplier = 1.25
    write_multipliers = {300.0: 1.25}
