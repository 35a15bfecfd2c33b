"""The whole-view builder: a body's :class:`SimRequest` from its dialect's
exact cache view (:func:`fidelity.wire.cache_view_at`), segment by segment.

It builds the requests of the dialects and endpoints that have no element
handler (:mod:`fidelity.cache.element_ids`: Gemini, DashScope, vLLM,
SGLang, template DeepSeek models other than V4, and bodies an OpenAI-shaped
gateway serves with its own provider's rules), and gives the differ each
segment's billed ids (:func:`view_ids`): its segments carry the bytes as sent,
where the first divergent byte is found.

* **DashScope** explicit caching is used when a body carries a
  ``cache_control`` marker (the two modes are exclusive per request,
  https://www.alibabacloud.com/help/en/model-studio/context-cache), else
  implicit caching; breakpoints end at the marked segment.
* **Anthropic** (https://platform.claude.com/docs/en/build-with-claude/prompt-caching,
  read 2026-12-01): ``cache_control`` markers are not part of the key, so
  their bytes are removed before tokenizing (:func:`strip_markers`); each
  tool, system block and message content block is one block of the
  20-block lookback (:func:`block_lengths`, :func:`block_ends_of`).
* **Every other dialect**: the cache view's segments tokenized as
  :func:`fidelity.tokens.prompt_ids.prompt_token_ids` does; the params
  segment (model, OpenAI's ``prompt_cache_key``, reasoning and tool-choice
  settings) is the partition key.
"""

from __future__ import annotations

from array import array
from collections.abc import Hashable, Sequence
from typing import Any

import orjson

from .. import providers, tokens, wire
from ..errors import InputError
from ..jsonbytes import element_spans, skip_value, skip_ws
from ..tokens.billed import billing_tokenizer, prompt_tail
from ..wire import Segment
from ..wire.spans import member_spans
from .assemble import _LEVEL_SALTS, _head_len, _tool_prompt_moved, anthropic_request, generic_request
from .simulator import SimRequest

__all__ = ["MARKER", "strip_markers", "view_of", "view_ids", "whole_request", "block_lengths", "block_ends_of",
           "anthropic_level_starts", "anthropic_block_ends", "LEVELS", "LEVEL_SALTS", "remember", "MEMO_BODY"]

MARKER = b'"cache_control"'


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


#: entries per memo, and the largest body remembered: a body of 256 kB and its
#: prompt's ids take about 1 MB, so a memo holds at most about 64 MB
MEMO_SIZE = 64
MEMO_BODY = 256 << 10


def remember(memo: dict[Any, Any], key: Any, value: Any) -> None:
    """``memo[key] = value``, dropping the oldest entry past :data:`MEMO_SIZE`."""
    if len(memo) >= MEMO_SIZE:
        try:
            memo.pop(next(iter(memo)))
        except (KeyError, RuntimeError, StopIteration):  # another thread evicted it first
            pass
    memo[key] = value


def view_of(d: wire.Dialect, body: bytes, endpoint: str | None = None) -> list[Segment]:
    """:func:`fidelity.wire.cache_view_at`, memoised on the last bodies
    (segments are immutable; each caller gets its own list)."""
    if len(body) > MEMO_BODY:
        return wire.cache_view_at(d, body, endpoint)
    key = (d.name, body, endpoint)
    hit = _VIEWS.get(key)
    if hit is None:
        hit = tuple(wire.cache_view_at(d, body, endpoint))
        remember(_VIEWS, key, hit)
    return list(hit)


_VIEWS: dict[tuple[str, bytes, str | None], tuple[Segment, ...]] = {}


def view_ids(d: wire.Dialect, segs: Sequence[Segment], model: str,
             tok: tokens.Tokenizer | None = None) -> list[array[int]]:
    """Billed ids per segment of a cache view under ``tok`` (default: the
    model's billing tokenizer): the ids :func:`cache_prompt` computes, from
    the same memo, so that a report's diff, counterfactual children and
    simulator prompts tokenize each view once."""
    if tok is None:
        tok = tokens.for_model(model, d.provider)
    return _ids(billing_tokenizer(tok, d.name), segs, d, model)




def whole_request(d: wire.Dialect, body: bytes, obj: Any, tok: tokens.Tokenizer, model: str, prov: str,
                  endpoint: str | None, time: float | None, label: Hashable | None,
                  output: Sequence[int]) -> tuple[str, SimRequest]:
    """The cache model's name and the :class:`SimRequest` of ``body`` (parsed:
    ``obj``, needed for Anthropic) sent to ``prov``'s cache at ``endpoint``,
    from its whole cache view. Raises :class:`InputError` on a body the
    dialect's cache view refuses."""
    segs = view_of(d, body, endpoint)
    if prov == "anthropic" and d.provider == "anthropic":
        cm = providers.get("anthropic").cache_model or "anthropic"
        return cm, _anthropic(body, obj, segs, tok, d, model, time, label, output)
    explicit = prov == "dashscope" and MARKER in body
    cm = "dashscope-explicit" if explicit else (providers.get(prov).cache_model or prov)
    return cm, _generic(d, segs, tok, model, time, label, output, explicit)


def _ids(tok: tokens.Tokenizer, segs: Sequence[Segment], d: wire.Dialect, model: str,
         memo: dict[Any, list[array[int]]] | None = None, size: int = 128) -> list[array[int]]:
    """Billed ids per segment: the differ's own function (not a second path),
    memoised on the segments (the same prompt under another breakpoint
    placement has the same unmarked segments). Arrays are read-only."""
    memo = _IDS_MEMO if memo is None else memo
    key = (tok.name, d.name, model, tuple((s.kind, s.data, s.text) for s in segs))
    hit = memo.get(key)
    if hit is None:
        from ..tokens.prompt_ids import prompt_token_ids

        hit = prompt_token_ids(tok, segs, dialect=d.name, provider=d.provider, model=model)
        if len(memo) >= size:
            memo.pop(next(iter(memo)))  # oldest first
        memo[key] = hit
    return hit


#: whole prompts (a few, large) and single content blocks (many, small)
_IDS_MEMO: dict[Any, list[array[int]]] = {}
_BLOCK_MEMO: dict[Any, list[array[int]]] = {}


def _generic(d: wire.Dialect, segs: Sequence[Segment], tok: tokens.Tokenizer, model: str, time: float | None,
             label: Hashable | None, output: Sequence[int], explicit: bool) -> SimRequest:
    ids = _ids(tok, segs, d, model)
    key = b"".join(s.data for s in segs if s.kind == "params")
    marked = [explicit and MARKER in s.data for s in segs]
    return generic_request([s.kind for s in segs], ids, prompt_tail(tok, d.name), time, label, output, key,
                           marked if explicit else None)


# --------------------------------------------------------------------------- Anthropic

_LEVELS = {"tools": "tools", "system": "system", "message": "messages"}
#: the public names the element builder reads (no private name crosses a module)
LEVEL_SALTS, LEVELS = _LEVEL_SALTS, _LEVELS


def _cc_of(v: Any) -> Any:
    return v.get("cache_control") if isinstance(v, dict) else None


def _block_ends(tok: tokens.Tokenizer, d: wire.Dialect, model: str, seg: Segment, value: Any,
                seg_ids: array[int], blocks: Sequence[bytes] | None = None) -> list[tuple[int, Any]]:
    """(offset inside the segment, ``cache_control``) at the end of each
    content block of one segment (a tool, a system block, a message whose
    content is a list: Anthropic's unit for the 20-block lookback): see
    :func:`block_lengths` and :func:`block_ends_of`."""
    overhead, lengths = block_lengths(tok, d, model, seg, value, blocks)
    return block_ends_of(value, seg.kind, len(seg_ids), overhead, lengths)


def block_lengths(tok: tokens.Tokenizer, d: wire.Dialect, model: str, seg: Segment, value: Any,
                  blocks: Sequence[bytes] | None = None) -> tuple[int, list[int]]:
    """The per-message overhead and each content block's length in billed
    ids, for :func:`block_ends_of` (``(0, [])`` unless the segment is a
    message whose ``content`` is a list of two or more blocks). Block
    lengths come from the same billed-ids function, each block counted as a
    one-block message less the per-message overhead; markers are removed
    first, so the lengths do not depend on them. ``blocks``: the bytes of
    each element of ``content`` when the caller has them (else they are
    sliced from the segment)."""
    content = value.get("content") if isinstance(value, dict) and seg.kind == "message" else None
    if not isinstance(content, list) or len(content) < 2:
        return 0, []
    if blocks is None:
        blocks = [seg.data[s:e] for s, e in element_spans(seg.data, "/content")]
    probe = [Segment("message", 0, "", b'{"role":"user","content":[]}')]
    probe += [Segment("message", i + 1, "", strip_markers(b)) for i, b in enumerate(blocks)]
    got = [_ids(tok, [probe[0], seg_], d, model, _BLOCK_MEMO, 8192)[1] for seg_ in probe[1:]]
    overhead = len(_ids(tok, probe[:1], d, model, _BLOCK_MEMO, 8192)[0])
    return overhead, [len(g) - overhead for g in got]


def block_ends_of(value: Any, kind: str, total: int, overhead: int,
                  lengths: Sequence[int]) -> list[tuple[int, Any]]:
    """The block ends of :func:`_block_ends` from each content block's
    length in tokens (``lengths``, in the order of ``content``) and the
    message's own overhead (its ids ahead of the first block): one
    ``(end, cache_control)`` per block when ``content`` is a list of two
    or more blocks and the lengths add up to ``total`` (the segment's
    count), else one for the whole segment. The scan's element path gives
    the lengths it has from tokenizing the message once."""
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


def anthropic_level_starts(segs: Sequence[Segment], ids: Sequence[Sequence[int]],
                           model: str) -> tuple[int, int, int]:
    """Token offsets where the tools, system and messages levels start in
    the prompt :func:`cache_prompt` builds for an Anthropic body, given the
    body's unmarked cache view and its billed ids (what the differ holds)."""
    head = 0
    size = {"tools": 0, "system": 0}
    for seg, seg_ids in zip(segs, ids):
        if seg.kind == "params":
            head = _head_len(seg_ids)
        elif seg.kind in size:
            if seg.kind == "tools" and not size["tools"]:
                size["tools"] -= _tool_prompt_moved(model, seg_ids)
            size[seg.kind] += len(seg_ids)
    return head, head + size["tools"], head + size["tools"] + size["system"]


def _anthropic(body: bytes, obj: Any, segs: Sequence[Segment], tok: tokens.Tokenizer, d: wire.Dialect,
               model: str, time: float | None, label: Hashable | None, output: Sequence[int]) -> SimRequest:
    """Anthropic's prefix (tools, system, messages) in billed ids: each
    segment's ids (those of the differ's cache view with the markers
    removed) and block ends, then :func:`anthropic_request`."""
    if not isinstance(obj, dict):
        raise InputError("an Anthropic request body must be a JSON object")
    unmarked = [seg if MARKER not in seg.data else
                Segment(seg.kind, seg.index, seg.pointer, strip_markers(seg.data), seg.text) for seg in segs]
    ids = _ids(tok, unmarked, d, model)
    params_ids = array(tokens.TOKEN_TYPECODE)
    blocks: list[tuple[str, array[int], list[tuple[int, Any]]]] = []  # (level, ids, [(end, cache_control)])
    for seg, seg_ids in zip(segs, ids):
        if seg.kind == "params":
            params_ids = seg_ids
            continue
        level = _LEVELS.get(seg.kind)
        if level is None:
            continue
        blocks.append((level, seg_ids, anthropic_block_ends(tok, d, model, seg, seg_ids)))
    salts = [(m.key, body[m.value_start : m.end]) for m in member_spans(body)]
    return anthropic_request(params_ids, blocks, salts, obj, model, time, label, output)


def anthropic_block_ends(tok: tokens.Tokenizer, d: wire.Dialect, model: str, seg: Segment,
                         seg_ids: array[int], value: Any = None,
                         blocks: Sequence[bytes] | None = None) -> list[tuple[int, Any]]:
    """:func:`_block_ends` of one segment (its bytes as sent, markers kept);
    ``value`` (the segment parsed) and ``blocks`` (the bytes of each element
    of its ``content``) when the caller has them."""
    if value is None:
        try:  # a slice of a body already parsed strictly (cache_prompt): the fast parser is enough
            value = orjson.loads(seg.data)
        except orjson.JSONDecodeError:
            value = None
    return _block_ends(tok, d, model, seg, value, seg_ids, blocks)
