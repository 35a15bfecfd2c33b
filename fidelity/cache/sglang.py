"""SGLang RadixAttention prefix cache.

Like every self-hosted engine here it must compute at least the last
prompt token itself (to produce the next-token logits), so a prompt of n
tokens reads at most n-1 from cache; entries have no time limit and are
evicted least-recently-used under memory pressure; nothing is billed, so
the multipliers express compute saved (read 0, write 1).
"""

from __future__ import annotations

from ._base import CacheModel

__all__ = ["SGLangCache"]


class SGLangCache(CacheModel):
    """SGLang RadixAttention.

    Rules (https://docs.sglang.ai/ and the RadixAttention paper,
    https://arxiv.org/abs/2312.07104): prefixes live in a radix tree; with
    the default ``page_size`` 1 any shared prefix length is reusable, token
    by token; at least the last prompt token is recomputed (at most n-1
    cached). Eviction: LRU of tree leaves.
    """

    name = "sglang"
    provider = "sglang"
    page_size = 1
    includes_output = True
    read_multiplier = 0.0
    write_multiplier = 1.0

    def reusable(self, common_prefix: int, prompt_len: int) -> int:
        usable = min(common_prefix, prompt_len - 1)
        return max(0, usable // self.page_size * self.page_size)
