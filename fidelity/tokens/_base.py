"""The tokenizer base class: a concrete tokenizer implements ``_encode_chunk``;
this class memoises per text, cuts text longer than ``CHUNK_CHARS`` at safe
boundaries (a line feed before an ASCII letter) and encodes an edited recent
text around the change (:mod:`._edits`). Why the cuts are exact:
docs/tokens-cache-prices.md, "Memo and long input".
"""

from __future__ import annotations

import functools
import os
import re
from array import array

from ._edits import EDIT_MIN_CHARS, RecentTexts

__all__ = ["CHUNK_CHARS", "MEMO_SIZE", "TOKEN_TYPECODE", "safe_chunks", "Tokenizer"]

#: texts up to this many characters are encoded whole
CHUNK_CHARS = 32_768
#: entries kept by each tokenizer's memo
MEMO_SIZE = 8192
#: ``array`` typecode of token ids: signed 64-bit holds BPE ranks, the estimate
#: tokenizers' CRC-32 pseudo ids (past a signed 32-bit 'i') and negative placeholders.
TOKEN_TYPECODE = "q"

_SAFE_BOUNDARY = re.compile(r"\n(?=[A-Za-z])")


def safe_chunks(text: str, size: int = CHUNK_CHARS) -> list[str]:
    """Cut ``text`` into pieces of at least ``size`` characters (the last may
    be shorter) at safe boundaries; ``"".join(result) == text``."""
    if len(text) <= size:
        return [text]
    pieces: list[str] = []
    start = 0
    while len(text) - start > size:
        match = _SAFE_BOUNDARY.search(text, start + size - 1)
        if match is None:
            break
        cut = match.end()
        pieces.append(text[start:cut])
        start = cut
    pieces.append(text[start:])
    return pieces


class Tokenizer:
    """A tokenizer: ``encode`` gives token ids, ``count`` their number.
    ``estimated``: no public tokenizer exists, the ids are a documented
    approximation; ``source``: where the vocabulary comes from."""

    name: str
    estimated: bool
    source: str

    def __init__(self, name: str, *, source: str, estimated: bool = False, chunk_chars: int = CHUNK_CHARS) -> None:
        self.name = name
        self.source = source
        self.estimated = estimated
        self.chunk_chars = chunk_chars
        self._chunk_memo = functools.lru_cache(maxsize=MEMO_SIZE)(self._encode_new)
        self._edits: RecentTexts | bool | None = None  # None: not decided yet; False: off
        self._count_memo = functools.lru_cache(maxsize=MEMO_SIZE)(self._count_uncached)

    def __repr__(self) -> str:
        flag = ", estimated" if self.estimated else ""
        return f"<Tokenizer {self.name}{flag}>"

    # -- to implement ---------------------------------------------------
    def _encode_chunk(self, text: str) -> list[int]:
        raise NotImplementedError

    # -- public -----------------------------------------------------------
    def encode(self, text: str) -> list[int]:
        """Token ids of ``text`` (special-token strings are recognised only
        by tokenizers whose input is a chat-template rendering)."""
        return self.ids(text).tolist()

    def ids(self, text: str) -> array[int]:
        """Like :meth:`encode`, packed as ``array('q')``. **Read-only**: it may
        be the memo's own; copy it before changing it."""
        chunks = safe_chunks(text, self.chunk_chars)
        if len(chunks) == 1:
            return self._chunk_memo(text)
        out = array(TOKEN_TYPECODE)
        for chunk in chunks:
            out.extend(self._chunk_memo(chunk))  # array to array: a memcpy
        return out

    def count(self, text: str) -> int:
        """Number of tokens of ``text``, memoised per text."""
        return self._count_memo(text)

    def cache_clear(self) -> None:
        self._chunk_memo.cache_clear()
        self._count_memo.cache_clear()

    # -- internals --------------------------------------------------------
    def _encode_array(self, text: str) -> array[int]:
        return array(TOKEN_TYPECODE, self._encode_chunk(text))

    def _edit_safe(self) -> bool:
        """Whether ids split at every edit boundary (:mod:`._edits`): only
        tokenizers whose pattern and specials were checked say so."""
        return False

    @property
    def edits(self) -> RecentTexts | None:
        """The recent long texts edited texts are encoded from; ``None`` (every
        text whole) unless :meth:`_edit_safe`, or with ``FIDELITY_TOKEN_EDITS=0``."""
        edits = self._edits
        if edits is None:
            on = os.environ.get("FIDELITY_TOKEN_EDITS", "1").strip() != "0"
            edits = self._edits = RecentTexts() if on and self._edit_safe() else False
        return edits if isinstance(edits, RecentTexts) else None

    def _encode_new(self, text: str) -> array[int]:
        """A memo miss: encoded around an edit of a recent text, or whole."""
        if len(text) >= EDIT_MIN_CHARS:
            edits = self.edits
            if edits is not None:
                return edits.encode(text, self._encode_array)
        return self._encode_array(text)

    def _count_uncached(self, text: str) -> int:
        return len(self.ids(text))
