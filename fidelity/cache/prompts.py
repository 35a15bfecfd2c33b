"""Wire bodies as the provider's cache keys them: :class:`SimRequest` values.

The simulator (:mod:`fidelity.cache.simulator`) works on token sequences;
this module turns one request body into one, per provider:

* **Anthropic** (https://platform.claude.com/docs/en/build-with-claude/prompt-caching,
  read 2026-12-01): the prefix is tools, then system, then messages; each
  tool, system block and message content block is one *block* (the unit of
  the 20-block lookback). ``cache_control`` markers are not part of the
  key: the cache keys on content, and a breakpoint only says where to write
  and where to look, so the markers' bytes are removed before tokenizing
  (:func:`strip_markers`) and a breakpoint moved forward is no content
  change. A top-level ``cache_control`` ("automatic caching") puts a
  breakpoint at the end of the last block. The guide's table "What
  invalidates the cache": ``tool_choice``, image presence and thinking
  parameters (``thinking``; ``output_config`` is treated as one, see the
  wire module) invalidate the messages cache only, ``speed`` the system and
  messages caches, tool definitions everything: each such setting is folded
  into the first token of the level it invalidates (a *salt*), so two
  requests that differ there share the levels above it and nothing after.
  Entries are per model (the partition key).
* **DashScope** explicit caching is used when a body carries a
  ``cache_control`` marker (the two modes are exclusive per request,
  https://www.alibabacloud.com/help/en/model-studio/context-cache), else
  implicit caching; breakpoints end at the marked segment.
* **Every other dialect**: the dialect's cache view (``Dialect.cache_view``),
  its segments tokenized as :func:`fidelity.tokens.prompt_ids.prompt_token_ids` does;
  the params segment (model, OpenAI's ``prompt_cache_key``, reasoning and
  tool-choice settings) is the partition key.

The request is assembled from the per-segment ids by :mod:`fidelity.cache.assemble`.
"""

from __future__ import annotations

from array import array
from collections.abc import Hashable, Sequence
from dataclasses import dataclass, replace
from typing import Any

import orjson

from .. import providers, tokens, wire
from ..errors import InputError
from ..jsonbytes import element_spans, skip_value, skip_ws
from ..tokens.billed import billing_tokenizer, prompt_tail
from ..wire import Segment
from ..wire.spans import member_spans, parsed
from .assemble import (
    _LEVEL_SALTS,
    Assembled,
    _head_len,
    _tool_prompt_moved,
    anthropic_assemble,
    anthropic_images,
    anthropic_request,
    generic_assemble,
    generic_request,
    ttl_seconds,
)
from .simulator import SimRequest

__all__ = ["CachePrompt", "cache_prompt", "anthropic_level_starts", "strip_markers", "ttl_seconds", "MARKER",
           "generic_request", "anthropic_request", "anthropic_block_ends", "block_ends_of", "Assembled",
           "generic_assemble", "anthropic_assemble", "anthropic_images", "block_lengths", "view_of", "view_ids"]

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


@dataclass(frozen=True)
class CachePrompt:
    """One body ready for the simulator, and what it was read as."""

    request: SimRequest
    dialect: str
    provider: str
    cache_model: str
    model: str
    tokenizer: str
    estimated: bool




def cache_prompt(body: bytes, *, dialect: str | None = None, model: str | None = None,
                 time: float | None = None, label: Hashable | None = None,
                 output: Sequence[int] = (), path: str | None = None,
                 endpoint: str | None = None, provider: str | None = None) -> CachePrompt:
    """``body`` as its provider's cache sees it (see the module docstring).

    ``dialect`` defaults to detection from the body; ``model`` to the body's
    ``model``; ``output`` is the reply's token ids where known (DeepSeek and
    engines keep it in the cache); ``endpoint`` the URL the body went to
    (``None``: the provider's own API; see :func:`fidelity.wire.cache_view_at`);
    ``provider`` the provider whose cache serves the request when it is not
    the dialect's (an OpenAI-shaped body sent to DeepSeek's ``/responses`` or
    to OpenRouter: replay and scan pass the URL's provider).

    Token ids are the billed ones, from the one function the differ uses
    (:func:`fidelity.tokens.prompt_ids.prompt_token_ids` with the dialect: OpenAI's
    framing, media by the provider's rule, the calibrated Claude and Gemini
    estimates), so that replay, the simulator, ``diff`` and ``score`` count
    the same tokens."""
    body = bytes(body)
    if len(body) > _MEMO_BODY:
        return _cache_prompt(body, dialect, model, time, label, output, path, endpoint, provider)
    key = (body, dialect, model, endpoint, provider, tuple(output))
    hit = _PROMPTS.get(key)
    if hit is None:
        hit = _cache_prompt(body, dialect, model, time, label, output, path, endpoint, provider)
        _remember(_PROMPTS, key, hit)
    elif (hit.request.time, hit.request.label) != (time, label):
        hit = replace(hit, request=replace(hit.request, time=time, label=label))
    return hit


#: the last bodies read (a report asks for each parent and child body many
#: times, at other times and under other labels): their views and ids are
#: computed once; the time and label are the caller's
_PROMPTS: dict[tuple[Any, ...], CachePrompt] = {}
#: entries per memo, and the largest body remembered: a body of 256 kB and its
#: prompt's ids take about 1 MB, so a memo holds at most about 64 MB
_MEMO_SIZE = 64
_MEMO_BODY = 256 << 10


def _remember(memo: dict[Any, Any], key: Any, value: Any) -> None:
    """``memo[key] = value``, dropping the oldest entry past :data:`_MEMO_SIZE`."""
    if len(memo) >= _MEMO_SIZE:
        try:
            memo.pop(next(iter(memo)))
        except (KeyError, RuntimeError, StopIteration):  # another thread evicted it first
            pass
    memo[key] = value


def view_of(d: wire.Dialect, body: bytes, endpoint: str | None = None) -> list[Segment]:
    """:func:`fidelity.wire.cache_view_at`, memoised on the last bodies
    (segments are immutable; each caller gets its own list)."""
    if len(body) > _MEMO_BODY:
        return wire.cache_view_at(d, body, endpoint)
    key = (d.name, body, endpoint)
    hit = _VIEWS.get(key)
    if hit is None:
        hit = tuple(wire.cache_view_at(d, body, endpoint))
        _remember(_VIEWS, key, hit)
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


def _cache_prompt(body: bytes, dialect: str | None, model: str | None, time: float | None,
                  label: Hashable | None, output: Sequence[int], path: str | None, endpoint: str | None,
                  provider: str | None) -> CachePrompt:
    d = wire.get(dialect) if dialect else None
    # the strict parse is needed to detect the dialect, find the model, or
    # read an Anthropic body's blocks; the cache view checks the rest
    obj = parsed(body, path) if d is None or model is None or d.provider == "anthropic" else None
    if d is None:
        d = wire.detect(obj, path=path)
    if model is None:
        model = obj.get("model") if isinstance(obj, dict) and isinstance(obj.get("model"), str) else None
        if model is None:
            raise InputError("the body names no model; pass the model", path=path)
    prov = provider or d.provider
    tok = billing_tokenizer(tokens.for_model(model, prov, nearest=True), d.name)  # unknown: nearest family, estimated
    try:
        segs = view_of(d, body, endpoint)
    except InputError as exc:
        raise (exc.at(path) if path else exc) from None
    if prov == "anthropic" and d.provider == "anthropic":
        req = _anthropic(body, obj, segs, tok, d, model, time, label, output)
        cm = providers.get("anthropic").cache_model or "anthropic"
    else:
        explicit = prov == "dashscope" and MARKER in body
        req = _generic(d, segs, tok, model, time, label, output, explicit)
        cm = "dashscope-explicit" if explicit else (providers.get(prov).cache_model or prov)
    return CachePrompt(req, d.name, prov, cm, model, tok.name, tok.estimated)


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
    return generic_request([s.kind for s in segs], ids, prompt_tail(tok, d.name, model=model), time, label, output, key,
                           marked if explicit else None)














# --------------------------------------------------------------------------- Anthropic

_LEVELS = {"tools": "tools", "system": "system", "message": "messages"}
#: the public names the scan's element builder reads (no private name crosses a package)
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










