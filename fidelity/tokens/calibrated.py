"""Calibrated estimate tokenizers for Claude and Gemini.

No public tokenizer exists for either model, so the count is an estimate
(every output says ``estimated``). The plain estimates
(``claude-estimate``, ``gemini-estimate``) count characters with each
provider's rule of thumb. These count the text with o200k_base (a public BPE vocabulary of a similar size)
and scale by a factor fitted on recorded usage: Claude 1.142, Gemini 1.0
Claude/Gemini tokens per o200k token (``python -m fidelity.tokens.fit``;
fitted and held-out errors in ``docs/tokens-billed.md``).

Ids stay prefix-stable, which the cache models need: the k-th o200k token
gives one id, and a second one (its id plus 2**40) where
``floor((k + 1) * f) - floor(k * f) == 2``, so two texts sharing a prefix
share the ids of that prefix. Claude Opus 4.7 and later use a new tokenizer
("up to 35% more tokens", https://platform.claude.com/docs/en/about-claude/models/whats-new-claude-4-7);
no recorded usage here fits it, so they use the same factor (a stated limit).

Why the base is o200k_base and not Anthropic's Claude-2 vocabulary:
``docs/tokens-billed.md``, "Which base vocabulary".
"""

from __future__ import annotations

import functools
from array import array
from typing import Any

import numpy as np

from ._base import TOKEN_TYPECODE, Tokenizer

__all__ = ["ScaledTokenizer", "CLAUDE_FACTOR", "GEMINI_FACTOR", "claude_calibrated", "gemini_calibrated"]

CLAUDE_FACTOR = 1.142
GEMINI_FACTOR = 1.0
_EXTRA = 1 << 40
#: texts of fewer base tokens are stretched in a loop (numpy's per-call cost dominates)
_SHORT = 32


class ScaledTokenizer(Tokenizer):
    """``base``'s ids, stretched to ``factor`` ids per base token."""

    def __init__(self, name: str, base: str, factor: float, *, source: str) -> None:
        super().__init__(name, source=source, estimated=True)
        self.base_name = base
        self.factor = factor
        self._scaled_memo = functools.lru_cache(maxsize=4096)(self._scaled)
        self._base: Tokenizer | None = None
        # the stretch pattern (reps, second, n_extra, short), published as one
        # tuple: threads encoding at once (``_parallel.encode_texts``) each see
        # a whole pattern, never parts of two
        self._pattern: tuple[Any, Any, Any, list[bool]] = (
            np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.int64), np.zeros(1, dtype=np.int64), [])

    def ids(self, text: str) -> array[int]:
        """The stretched ids of ``text`` (memoised per text; read-only)."""
        return self._scaled_memo(text)

    def _scaled(self, text: str) -> array[int]:
        base_tok = self._base
        if base_tok is None:
            from . import get

            base_tok = self._base = get(self.base_name)
        base = base_tok.ids(text)
        n = len(base)
        reps, second_at, n_extra, short = self._pattern
        if n > len(reps):
            reps, second_at, n_extra, short = self._grow(n)
        # the k-th base token gets a second id where floor((k+1)f) - floor(kf) >= 2
        if n < _SHORT:  # a short text: a loop costs less than numpy's calls
            small = array(TOKEN_TYPECODE)
            for t, second in zip(base, short):
                small.append(t)
                if second:
                    small.append(t + _EXTRA)
            return small
        out = np.repeat(np.frombuffer(base, dtype=np.int64), reps[:n])
        out[second_at[: n_extra[n]]] += _EXTRA
        return array(TOKEN_TYPECODE, out.tobytes())

    def _grow(self, n: int) -> tuple[Any, Any, Any, list[bool]]:
        """The stretch pattern of the first ``n`` base tokens (at least twice
        what it held): per base token how many ids it gives, where the second
        ids land in the output, and how many second ids the first k give. The
        pattern at a position does not depend on the text, so it is computed
        once, with the same float arithmetic as per text."""
        n = max(n, 2 * len(self._pattern[0]), 1024)
        k = np.arange(n, dtype=np.float64)
        extra = (np.floor((k + 1) * self.factor) - np.floor(k * self.factor)) >= 2
        reps = 1 + extra.astype(np.int64)
        pattern = (reps, np.cumsum(reps)[extra] - 1, np.concatenate(([0], np.cumsum(extra.astype(np.int64)))),
                   extra[:_SHORT].tolist())
        if len(reps) > len(self._pattern[0]):  # another thread may have grown it further meanwhile
            self._pattern = pattern
        return pattern

    def _encode_chunk(self, text: str) -> list[int]:
        return self.ids(text).tolist()


def claude_calibrated() -> ScaledTokenizer:
    return ScaledTokenizer("claude-calibrated", "o200k_base", CLAUDE_FACTOR,
                           source=f"estimate: o200k_base x {CLAUDE_FACTOR}, fitted on recorded Anthropic usage")


def gemini_calibrated() -> ScaledTokenizer:
    return ScaledTokenizer("gemini-calibrated", "o200k_base", GEMINI_FACTOR,
                           source=f"estimate: o200k_base x {GEMINI_FACTOR}, fitted on recorded Gemini usage")
