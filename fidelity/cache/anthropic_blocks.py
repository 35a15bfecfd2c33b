"""Anthropic's cache blocks: markers left out of the key, and where each
content block ends in a message's billed ids.

Rules (https://platform.claude.com/docs/en/build-with-claude/prompt-caching,
read 2026-12-01): each tool, system block and message content block is one
*block* (the unit of the 20-block lookback); the cache keys on content, so
``cache_control`` markers are removed before tokenizing (:func:`strip_markers`).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from .. import tokens, wire
from ..jsonbytes import skip_value, skip_ws
from ..wire import Segment
from .whole_view import MARKER, segment_ids

__all__ = ["MARKER", "strip_markers", "LEVELS", "block_lengths", "block_ends_of"]

#: single content blocks' ids (many, small)
_BLOCK_MEMO: dict[Any, list[Any]] = {}


def strip_markers(data: bytes) -> bytes:
    """``data`` (JSON bytes) without any ``"cache_control": value`` member
    and the comma that separated it: the bytes Anthropic's cache keys on."""
    if MARKER not in data:
        return data
    out = bytearray()
    pos = 0
    while True:
        at = data.find(MARKER, pos)
        if at < 0:
            break
        colon = skip_ws(data, at + len(MARKER))
        if colon >= len(data) or data[colon : colon + 1] != b":":
            out += data[pos : at + len(MARKER)]
            pos = at + len(MARKER)
            continue
        end = skip_value(data, skip_ws(data, colon + 1))
        start = at
        back = at - 1
        while back >= pos and data[back : back + 1] in b" \t\r\n":
            back -= 1
        if back >= pos and data[back : back + 1] == b",":
            start = back
        else:  # first member: drop the comma after it instead
            nxt = skip_ws(data, end)
            if data[nxt : nxt + 1] == b",":
                end = nxt + 1
        out += data[pos:start]
        pos = end
    out += data[pos:]
    return bytes(out)


#: a segment kind's cache level
LEVELS = {"tools": "tools", "system": "system", "message": "messages"}


def _cc_of(v: Any) -> Any:
    return v.get("cache_control") if isinstance(v, dict) else None


def block_lengths(tok: tokens.Tokenizer, d: wire.Dialect, model: str, seg: Segment, value: Any,
                  blocks: Sequence[bytes]) -> tuple[int, list[int]]:
    """The per-message overhead and each content block's length in billed
    ids (``blocks``: each content block's bytes), for :func:`block_ends_of`:
    each block counted as a one-block message, markers removed, less the
    per-message overhead (``(0, [])`` unless ``content`` is a list of two or
    more blocks)."""
    content = value.get("content") if isinstance(value, dict) and seg.kind == "message" else None
    if not isinstance(content, list) or len(content) < 2:
        return 0, []
    probe = [Segment("message", 0, "", b'{"role":"user","content":[]}')]
    probe += [Segment("message", i + 1, "", strip_markers(b)) for i, b in enumerate(blocks)]
    got = [segment_ids(tok, [probe[0], seg_], d, model, _BLOCK_MEMO, 8192)[1] for seg_ in probe[1:]]
    overhead = len(segment_ids(tok, probe[:1], d, model, _BLOCK_MEMO, 8192)[0])
    return overhead, [len(g) - overhead for g in got]


def block_ends_of(value: Any, kind: str, total: int, overhead: int,
                  lengths: Sequence[int]) -> list[tuple[int, Any]]:
    """``(offset inside the segment, cache_control)`` at the end of each
    content block of one segment (Anthropic's unit for the 20-block
    lookback), from the message's ``overhead`` and each block's length: one
    per block when ``content`` is a list of two or more blocks whose lengths
    add up to ``total``, else one for the whole segment."""
    content = value.get("content") if isinstance(value, dict) and kind == "message" else None
    if not isinstance(content, list) or len(content) < 2:
        cc = _cc_of(value)
        if isinstance(content, list) and content:
            cc = _cc_of(content[0])
        return [(total, cc)]
    out: list[tuple[int, Any]] = []
    at = overhead
    for block, n in zip(content, lengths):
        at += n
        out.append((at, _cc_of(block)))
    if at != total:
        return [(total, next((_cc_of(b) for b in reversed(content) if _cc_of(b) is not None), None))]
    return out
