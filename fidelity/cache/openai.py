"""OpenAI prompt caching (automatic, exact prefix)."""

from __future__ import annotations

from ._base import CacheModel

__all__ = ["OpenAICache"]


class OpenAICache(CacheModel):
    """OpenAI automatic prompt caching.

    Rules (https://platform.openai.com/docs/guides/prompt-caching, also
    https://developers.openai.com/api/docs/guides/prompt-caching):

    * "Caching is enabled automatically for prompts that are 1024 tokens or
      longer"; "cache hits are only possible for exact prefix matches".
    * The cached length is reported in 128-token steps: 1024, 1152, 1280...
      (the guide's ``cached_tokens`` section).
    * Entries are "typically cleared within 5 to 10 minutes of inactivity"
      and always within one hour; ``prompt_cache_retention="24h"`` extends
      this to 24 hours (https://learn.microsoft.com/azure/foundry/openai/how-to/prompt-caching
      describes the same two policies). Model: ``ttl`` 600 s; pass
      ``ttl=86400`` for extended retention.
    * No write fee; reads are discounted per model (gpt-4o 50%, gpt-4.1 75%,
      gpt-5 family 90%): the price table holds each model's cached price,
      ``read_multiplier`` 0.5 is the conservative fallback.

    No explicit-breakpoint mode is documented for OpenAI in the sources
    above, so none is modelled.
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
