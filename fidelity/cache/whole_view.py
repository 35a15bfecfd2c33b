"""The whole-view builder: a body's :class:`SimRequest` from its dialect's
exact cache view (:func:`fidelity.wire.cache_view_at`), segment by segment,
for the dialects and endpoints without an element handler
(docs/builder.md); and each body's cache view for the differ (:func:`view_of`).
The params segment (model, OpenAI's ``prompt_cache_key``...) is the partition key.
"""

from __future__ import annotations

from array import array
from collections.abc import Hashable, Sequence
from typing import Any

from .. import providers, tokens, wire
from ..tokens import billed
from ..wire import Segment
from .assemble import generic_request
from .simulator import SimRequest

__all__ = ["view_of", "segment_ids", "whole_request", "remember", "MEMO_BODY", "MARKER"]

#: a ``cache_control`` member (Anthropic's and DashScope's explicit breakpoints)
MARKER = b'"cache_control"'

#: entries per memo, and the largest body remembered: a body of 256 kB and its
#: prompt's ids take about 1 MB, so a memo holds at most about 64 MB
MEMO_SIZE = 64
MEMO_BODY = 256 << 10


def remember(memo: dict[Any, Any], key: Any, value: Any, size: int = MEMO_SIZE) -> None:
    """``memo[key] = value``, dropping the oldest entry past ``size``."""
    if len(memo) >= size:
        try:
            memo.pop(next(iter(memo)))
        except (KeyError, RuntimeError, StopIteration):  # another thread evicted it first
            pass
    memo[key] = value


def view_of(d: wire.Dialect, body: bytes, endpoint: str | None = None) -> list[Segment]:
    """:func:`fidelity.wire.cache_view_at`, memoised on the last bodies
    (segments are immutable; each caller gets its own list). Dialects whose
    ``view_key`` is equal (the same view code and settings) share entries."""
    if len(body) > MEMO_BODY:
        return wire.cache_view_at(d, body, endpoint)
    key = (getattr(d, "view_key", d.name), body, endpoint)
    hit = _VIEWS.get(key)
    if hit is None:
        hit = tuple(wire.cache_view_at(d, body, endpoint))
        remember(_VIEWS, key, hit)
    return list(hit)


_VIEWS: dict[tuple[Any, bytes, str | None], tuple[Segment, ...]] = {}


def whole_request(d: wire.Dialect, body: bytes, tok: tokens.Tokenizer, model: str, prov: str,
                  endpoint: str | None, time: float | None, label: Hashable | None,
                  output: Sequence[int]) -> tuple[str, SimRequest, None, tuple[array[int], ...]]:
    """The cache model's name, the :class:`SimRequest`, no level starts and
    each segment's billed ids of ``body`` sent to ``prov``'s cache at
    ``endpoint``, from its whole cache view (:class:`InputError` on a body
    the view refuses)."""
    segs = view_of(d, body, endpoint)
    # DashScope's explicit and implicit modes are exclusive per request: a marker chooses explicit
    # (https://www.alibabacloud.com/help/en/model-studio/context-cache); breakpoints end at marked segments
    explicit = prov == "dashscope" and MARKER in body
    cm = "dashscope-explicit" if explicit else (providers.get(prov).cache_model or prov)
    ids = segment_ids(tok, segs, d, model)
    key = b"".join(s.data for s in segs if s.kind == "params")
    marked = [MARKER in s.data for s in segs] if explicit else None
    req = generic_request([s.kind for s in segs], ids, billed.prompt_tail(tok, d.name, model=model), time, label,
                          output, key, marked)
    return cm, req, None, tuple(ids)


def segment_ids(tok: tokens.Tokenizer, segs: Sequence[Segment], d: wire.Dialect, model: str,
                memo: dict[Any, list[array[int]]] | None = None, size: int = 128) -> list[array[int]]:
    """Billed ids per segment (:func:`fidelity.tokens.billed.segment_ids`),
    memoised on the segments (the same prompt under another breakpoint
    placement has the same unmarked segments). Arrays are read-only."""
    memo = _IDS_MEMO if memo is None else memo
    key = (tok.name, d.name, model, tuple((s.kind, s.data, s.text) for s in segs))
    hit = memo.get(key)
    if hit is None:
        hit = billed.segment_ids(tok, segs, dialect=d.name, provider=d.provider, model=model)
        remember(memo, key, hit, size)
    return hit


#: whole prompts (a few, large)
_IDS_MEMO: dict[Any, list[array[int]]] = {}
