"""Calibrated estimate tokenizers for Claude and Gemini.

No public tokenizer exists for either, so the count is an estimate (marked
``estimated``): o200k_base ids, those at or above a fitted rank stretched by
a fitted factor (:class:`ScaledTokenizer`, fitted by ``python -m
fidelity.tokens.fit``), one pair per table of ``framing_estimate.CONSTANTS``:
Claude 3 to Opus 4.6 (``claude-calibrated``), Opus 4.7 and later
(``claude-calibrated-4.7``), Gemini (``gemini-calibrated``). Fitted and
held-out errors, and why the base is o200k_base: ``docs/tokens-billed.md``.
"""

from __future__ import annotations

import functools
from array import array
from typing import Any

import numpy as np

from ._base import TOKEN_TYPECODE, Tokenizer

__all__ = ["ScaledTokenizer", "CLAUDE_FACTOR", "CLAUDE_RANK", "CLAUDE_47_FACTOR", "CLAUDE_47_RANK", "GEMINI_FACTOR",
           "FITTED", "claude_calibrated", "claude_calibrated_47", "gemini_calibrated"]

#: Claude 3 through Opus 4.6: ids per stretched o200k token, and the o200k
#: id from which a token is stretched (``fidelity.tokens.fit``)
CLAUDE_FACTOR = 1.912
CLAUDE_RANK = 30_000
#: Opus 4.7 and later (``framing_estimate.table_of``: ``anthropic-4.7``), a new tokenizer:
#: https://platform.claude.com/docs/en/about-claude/models/whats-new-claude-4-7
CLAUDE_47_FACTOR = 5.141
CLAUDE_47_RANK = 30_000
GEMINI_FACTOR = 1.0
#: ``(factor, rank)`` per table of ``framing_estimate.CONSTANTS``
FITTED = {"anthropic": (CLAUDE_FACTOR, CLAUDE_RANK), "anthropic-4.7": (CLAUDE_47_FACTOR, CLAUDE_47_RANK),
          "gemini": (GEMINI_FACTOR, 0), "gemini-2.0": (GEMINI_FACTOR, 0)}
_EXTRA = 1 << 40
#: texts of fewer base tokens are stretched in a loop (numpy's per-call cost dominates)
_SHORT = 32


class ScaledTokenizer(Tokenizer):
    """``base``'s ids, each base id at or above ``rank`` stretched to
    ``factor`` ids on average; ids under ``rank`` stay one id each.

    The j-th stretched base token (counting only those whose id is ``rank``
    or more) gives ``floor((j + 1) * f) - floor(j * f)`` ids: its own, then
    its id plus m * 2**40 for the m-th more. The ids of a prefix do not
    depend on what follows it (the cache models need that)."""

    def __init__(self, name: str, base: str, factor: float, *, source: str, rank: int = 0) -> None:
        super().__init__(name, source=source, estimated=True)
        self.base_name = base
        self.factor = factor
        self.rank = rank
        self._scaled_memo = functools.lru_cache(maxsize=4096)(self._scaled)
        self._base: Tokenizer | None = None
        # more ids per stretched base token, by its index among them: published
        # as one array, so that threads encoding at once
        # (``_parallel.encode_texts``) each see a whole pattern, never parts of two
        self._pattern: Any = np.zeros(0, dtype=np.int64)

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
        more = self._pattern
        if n > len(more):
            more = self._grow(n)
        if n < _SHORT:  # a short text: a loop costs less than numpy's calls
            small = array(TOKEN_TYPECODE)
            j = 0
            for t in base:
                small.append(t)
                if t >= self.rank:
                    for m in range(1, int(more[j]) + 1):
                        small.append(t + m * _EXTRA)
                    j += 1
            return small
        b = np.frombuffer(base, dtype=np.int64)
        late = b >= self.rank
        extra = np.zeros(n, dtype=np.int64)
        extra[late] = more[: int(late.sum())]
        reps = 1 + extra
        out = np.repeat(b, reps)
        if len(out) > n:  # the m-th extra id of a base token is its id plus m * 2**40
            starts = np.repeat(np.cumsum(reps) - reps, reps)
            out += (np.arange(len(out), dtype=np.int64) - starts) * _EXTRA
        return array(TOKEN_TYPECODE, out.tobytes())

    def _grow(self, n: int) -> Any:
        """How many more ids each of the first ``n`` stretched base tokens
        gives (at least twice what the pattern held). It does not depend on
        the text, so it is computed once, with the same float arithmetic as
        per text."""
        n = max(n, 2 * len(self._pattern), 1024)
        j = np.arange(n + 1, dtype=np.float64)
        more = (np.diff(np.floor(j * self.factor)) - 1).astype(np.int64)
        if len(more) > len(self._pattern):  # another thread may have grown it further meanwhile
            self._pattern = more
        return more

    def _encode_chunk(self, text: str) -> list[int]:
        return self.ids(text).tolist()


def claude_calibrated() -> ScaledTokenizer:
    return ScaledTokenizer("claude-calibrated", "o200k_base", CLAUDE_FACTOR, rank=CLAUDE_RANK,
                           source=f"estimate: o200k_base, ids from {CLAUDE_RANK} x {CLAUDE_FACTOR}, "
                                  "fitted on recorded Anthropic usage (Claude 3 to Opus 4.6)")


def claude_calibrated_47() -> ScaledTokenizer:
    return ScaledTokenizer("claude-calibrated-4.7", "o200k_base", CLAUDE_47_FACTOR, rank=CLAUDE_47_RANK,
                           source=f"estimate: o200k_base, ids from {CLAUDE_47_RANK} x {CLAUDE_47_FACTOR}, "
                                  "fitted on recorded Anthropic usage (Opus 4.7 and later)")


def gemini_calibrated() -> ScaledTokenizer:
    return ScaledTokenizer("gemini-calibrated", "o200k_base", GEMINI_FACTOR,
                           source=f"estimate: o200k_base x {GEMINI_FACTOR}, fitted on recorded Gemini usage")
