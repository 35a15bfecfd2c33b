"""Calibrated estimate tokenizers for Claude and Gemini.

No public tokenizer exists for either model, so the count is an estimate
(every output says ``estimated``). The plain estimates
(``claude-estimate``, ``gemini-estimate``) count characters with each
provider's rule of thumb; on recorded usage they are off by 10-40%. These
count the text with o200k_base (a public BPE vocabulary of a similar size)
and scale by a factor fitted on recorded usage: Claude 1.159, Gemini 1.100
Claude/Gemini tokens per o200k token (``python -m fidelity.tokens.fit``;
fitted and held-out errors in ``docs/tokens-billed.md``).

Ids stay prefix-stable, which the cache models need: the k-th o200k token
gives one id, and a second one (its id plus 2**40) where
``floor((k + 1) * f) - floor(k * f) == 2``, so two texts sharing a prefix
share the ids of that prefix. Claude Opus 4.7 and later use a new tokenizer
("up to 35% more tokens", https://platform.claude.com/docs/en/about-claude/models/whats-new-claude-4-7);
no recorded usage here fits it, so they use the same factor (a stated limit).

Anthropic's own Claude-2 vocabulary (``anthropic/tokenizer.json`` in the
anthropic SDK 0.34.2) was tried as the base in place of o200k_base: it
is not better on tests left out of the fit (``docs/tokens-billed.md``,
"Which base vocabulary"), so o200k_base stays.
"""

from __future__ import annotations

import functools
from array import array

import numpy as np

from ._base import TOKEN_TYPECODE, Tokenizer

__all__ = ["ScaledTokenizer", "CLAUDE_FACTOR", "GEMINI_FACTOR", "claude_calibrated", "gemini_calibrated"]

CLAUDE_FACTOR = 1.159
GEMINI_FACTOR = 1.100
_EXTRA = 1 << 40


class ScaledTokenizer(Tokenizer):
    """``base``'s ids, stretched to ``factor`` ids per base token."""

    def __init__(self, name: str, base: str, factor: float, *, source: str) -> None:
        super().__init__(name, source=source, estimated=True)
        self.base_name = base
        self.factor = factor
        self._scaled_memo = functools.lru_cache(maxsize=4096)(self._scaled)

    def ids(self, text: str) -> array[int]:
        """The stretched ids of ``text`` (memoised per text; read-only)."""
        return self._scaled_memo(text)

    def _scaled(self, text: str) -> array[int]:
        from . import get

        base = np.frombuffer(get(self.base_name).ids(text), dtype=np.int64)
        k = np.arange(len(base), dtype=np.float64)
        # the k-th base token gets a second id where floor((k+1)f) - floor(kf) >= 2
        extra = (np.floor((k + 1) * self.factor) - np.floor(k * self.factor)) >= 2
        out = np.repeat(base, 1 + extra.astype(np.int64))
        second = np.cumsum(1 + extra.astype(np.int64))[extra] - 1
        out[second] += _EXTRA
        return array(TOKEN_TYPECODE, out.tobytes())

    def _encode_chunk(self, text: str) -> list[int]:
        return self.ids(text).tolist()


def claude_calibrated() -> ScaledTokenizer:
    return ScaledTokenizer("claude-calibrated", "o200k_base", CLAUDE_FACTOR,
                           source=f"estimate: o200k_base x {CLAUDE_FACTOR}, fitted on recorded Anthropic usage")


def gemini_calibrated() -> ScaledTokenizer:
    return ScaledTokenizer("gemini-calibrated", "o200k_base", GEMINI_FACTOR,
                           source=f"estimate: o200k_base x {GEMINI_FACTOR}, fitted on recorded Gemini usage")
