"""Token ids per segment of a cache view: what the differ, the cache
prompts and the proxy count (one function, below the cache and the differ)."""

from __future__ import annotations

from array import array
from collections.abc import Sequence

from ..wire import Segment
from . import TOKEN_TYPECODE, Tokenizer, segment_tokens

__all__ = ["prompt_token_ids"]


def prompt_token_ids(tok: Tokenizer, segs: Sequence[Segment], *, dialect: str | None = None,
                     provider: str | None = None, model: str | None = None) -> list[array[int]]:
    """Token ids per segment of a cache view, each an ``array('q')`` shared
    with the tokenizer memos (read-only); the params segment holds none.
    Given the ``dialect``, the ids are the billed ones
    (:func:`fidelity.tokens.billed.segment_ids`)."""
    if dialect is not None:
        from .billed import segment_ids

        return segment_ids(tok, segs, dialect=dialect, provider=provider or "", model=model or "")
    ids = segment_tokens(tok, segs)
    return [array(TOKEN_TYPECODE) if seg.kind == "params" else t for seg, t in zip(segs, ids)]
