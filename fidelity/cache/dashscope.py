"""Alibaba Cloud Model Studio (DashScope) context cache: implicit and explicit."""

from __future__ import annotations

from ._base import CacheModel
from ._breakpoints import BreakpointCache

__all__ = ["DashScopeImplicitCache", "DashScopeExplicitCache"]


class DashScopeImplicitCache(CacheModel):
    """DashScope implicit cache (automatic): common prefixes of at least 256
    tokens, hits not guaranteed, billed at 20% of input, no write surcharge;
    lifetime not guaranteed, modelled as 5 minutes. The Chinese page states
    1024 for both modes: pass ``minimum=1024`` to follow it.

    Sources: https://www.alibabacloud.com/help/en/model-studio/context-cache,
    https://help.aliyun.com/zh/model-studio/context-cache.
    """

    name = "dashscope"
    provider = "dashscope"
    minimum = 256
    ttl = 300.0
    read_multiplier = 0.2
    write_multiplier = 1.0


class DashScopeExplicitCache(BreakpointCache):
    """DashScope explicit cache (``cache_control: {"type": "ephemeral"}``):
    at most 4 markers, each writing the prefix from the start of
    ``messages`` and looking back at most 20 content blocks; blocks of at
    least 1024 tokens; valid 5 minutes, reset on hit; creation 125% of
    input, hits 10%; exclusive with the implicit cache per request.

    Sources: https://www.alibabacloud.com/help/en/model-studio/context-cache
    ("Explicit cache"); the lookback: https://help.aliyun.com/zh/model-studio/context-cache.
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
