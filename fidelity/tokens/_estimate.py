"""Estimated tokenizers for providers that publish no tokenizer.

:class:`EstimateTokenizer` counts characters with the provider's rule of
thumb (Claude 3.5 characters a token, Gemini 4). The cache models compare
token *sequences*, so it also yields ids: the k-th run of text ends at
``floor(k * chars_per_token)`` and each run's id is its CRC-32 (up to
``2**32 - 1``: 64-bit ids), so two texts that share a prefix share the ids of
every run inside it. :class:`NearestTokenizer` lends the nearest family's
real tokenizer to a model whose vocabulary nobody publishes
(``fidelity.tokens.for_model(..., nearest=True)``). Every figure from these
is marked ``estimated``.
"""

from __future__ import annotations

import math
import zlib
from array import array

from ._base import Tokenizer

__all__ = ["EstimateTokenizer", "NearestTokenizer", "claude_estimate", "gemini_estimate"]


class EstimateTokenizer(Tokenizer):
    """Characters-per-token estimate with stable pseudo ids."""

    def __init__(self, name: str, *, chars_per_token: float, source: str) -> None:
        super().__init__(name, source=source, estimated=True)
        self.chars_per_token = chars_per_token

    def ids(self, text: str) -> array[int]:
        # The estimate is linear already; no chunking, which would shift runs.
        return self._chunk_memo(text)

    def _encode_chunk(self, text: str) -> list[int]:
        n = math.ceil(len(text) / self.chars_per_token)
        cuts = [min(len(text), math.floor(k * self.chars_per_token)) for k in range(n + 1)]
        data = text.encode("utf-8", "surrogatepass")
        if len(data) == len(text):  # ASCII: character offsets are byte offsets
            return [zlib.crc32(data[a:b]) for a, b in zip(cuts, cuts[1:])]
        return [zlib.crc32(text[a:b].encode("utf-8", "surrogatepass")) for a, b in zip(cuts, cuts[1:])]


def claude_estimate() -> EstimateTokenizer:
    # "For Claude, a token approximately represents 3.5 English characters"
    # (https://platform.claude.com/docs/en/about-claude/glossary, section Tokens)
    return EstimateTokenizer("claude-estimate", chars_per_token=3.5, source="estimate: 3.5 characters per token "
                             "(https://platform.claude.com/docs/en/about-claude/glossary)")


def gemini_estimate() -> EstimateTokenizer:
    # "For Gemini models, a token is equivalent to about 4 characters" (https://ai.google.dev/gemini-api/docs/tokens)
    return EstimateTokenizer("gemini-estimate", chars_per_token=4.0,
                             source="estimate: 4 characters per token (https://ai.google.dev/gemini-api/docs/tokens)")


class NearestTokenizer(Tokenizer):
    """Another family's tokenizer standing in for an unknown vocabulary: the
    same ids as ``base``, named ``<base>~nearest`` and marked estimated."""

    def __init__(self, base: Tokenizer) -> None:
        super().__init__(f"{base.name}~nearest", estimated=True, chunk_chars=base.chunk_chars,
                         source=f"estimate: the vocabulary of {base.name} stands in ({base.source})")
        self.base = base

    def ids(self, text: str) -> array[int]:
        return self.base.ids(text)

    def _encode_chunk(self, text: str) -> list[int]:
        return self.base._encode_chunk(text)
