"""vLLM automatic prefix caching.

Like every self-hosted engine here it must compute at least the last
prompt token itself (to produce the next-token logits), so a prompt of n
tokens reads at most n-1 from cache; entries have no time limit and are
evicted least-recently-used under memory pressure; nothing is billed, so
the multipliers express compute saved (read 0, write 1).
"""

from __future__ import annotations

from ._base import CacheModel

__all__ = ["VLLMCache"]


class VLLMCache(CacheModel):
    """vLLM automatic prefix caching.

    Rules (https://docs.vllm.ai/en/latest/design/prefix_caching.html): the KV
    cache is split into blocks of ``block_size`` tokens (16 by default) and
    "only full blocks are cached"; a block is identified by the hash of its
    tokens and all tokens before it, so reuse is prefix-only and in whole
    blocks. When the whole prompt is cached vLLM still recomputes the last
    token (the scheduler caps computed tokens at n-1), so at most
    ``floor((n-1)/16)*16`` tokens hit. Eviction: LRU among free blocks.
    """

    name = "vllm"
    provider = "vllm"
    block_size = 16
    includes_output = True
    read_multiplier = 0.0
    write_multiplier = 1.0

    def reusable(self, common_prefix: int, prompt_len: int) -> int:
        usable = min(common_prefix, prompt_len - 1)
        return max(0, usable // self.block_size * self.block_size)
