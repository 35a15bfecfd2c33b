"""OpenAI prompt caching (automatic, exact prefix)."""

from __future__ import annotations

from ._base import CacheModel

__all__ = ["OpenAICache"]


class OpenAICache(CacheModel):
    """OpenAI automatic prompt caching: exact prefixes of at least 1024
    tokens, served in 128-token steps; ``ttl`` 600 s ("typically cleared
    within 5 to 10 minutes of inactivity"; pass ``ttl=86400`` for
    ``prompt_cache_retention="24h"``); no write fee, per-model read discount
    in the price table (0.5 fallback); no explicit breakpoints.

    Sources: https://platform.openai.com/docs/guides/prompt-caching,
    https://learn.microsoft.com/azure/foundry/openai/how-to/prompt-caching;
    docs/tokens-cache-prices.md.
    """

    name = "openai"
    provider = "openai"
    minimum = 1024
    step = 128
    ttl = 600.0
    read_multiplier = 0.5
    write_multiplier = 1.0

    def reusable(self, common_prefix: int, prompt_len: int) -> int:
        usable = min(common_prefix, prompt_len)
        if usable < self.minimum:
            return 0
        return self.minimum + (usable - self.minimum) // self.step * self.step
