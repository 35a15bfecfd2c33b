"""llama.cpp server prompt cache.

Like every self-hosted engine here it must compute at least the last
prompt token itself (to produce the next-token logits), so a prompt of n
tokens reads at most n-1 from cache; entries have no time limit and are
evicted least-recently-used under memory pressure; nothing is billed, so
the multipliers express compute saved (read 0, write 1).
"""

from __future__ import annotations

from ._base import CacheModel

__all__ = ["LlamaCppCache"]


class LlamaCppCache(CacheModel):
    """llama.cpp server prompt cache (``cache_prompt``, on by default).

    Rules (https://github.com/ggml-org/llama.cpp/blob/master/tools/server/README.md,
    ``cache_prompt``: "Re-use KV cache from a previous request if possible.
    This way the common prefix does not have to be re-processed"): a slot
    keeps its last sequence; the next prompt reuses the common prefix with
    it, and at least one token is always evaluated (at most n-1). The model
    takes the best earlier sequence, as the server picks the slot by prompt
    similarity (``--slot-prompt-similarity``); with one slot, pass only the
    slot's last request as ``earlier``.
    """

    name = "llama.cpp"
    provider = "llama.cpp"
    includes_output = True
    read_multiplier = 0.0
    write_multiplier = 1.0

    def reusable(self, common_prefix: int, prompt_len: int) -> int:
        return max(0, min(common_prefix, prompt_len - 1))
