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
"""

from __future__ import annotations

import hashlib
from array import array
from bisect import bisect_left
from collections.abc import Hashable, Sequence
from dataclasses import dataclass, field, replace
from operator import is_
from typing import Any

import orjson

from .. import providers, tokens, wire
from ..errors import InputError
from ..jsonbytes import element_spans, iter_members, loads, skip_value, skip_ws
from ..tokens.billed import billing_tokenizer, prompt_tail
from ..wire import Segment
from .invalidation import ANTHROPIC_INVALIDATES, IMAGES_LEVEL
from .simulator import SimRequest

__all__ = ["CachePrompt", "cache_prompt", "anthropic_level_starts", "strip_markers", "ttl_seconds", "MARKER",
           "generic_request", "anthropic_request", "anthropic_block_ends", "block_ends_of", "Assembled",
           "generic_assemble", "anthropic_assemble", "anthropic_images", "block_lengths", "view_of", "view_ids"]

MARKER = b'"cache_control"'

#: Lifetimes Anthropic documents for ``cache_control.ttl`` (seconds).
_TTLS = {"5m": 300.0, "1h": 3600.0}


def ttl_seconds(cache_control: Any, default: float = 300.0) -> float:
    """Seconds an entry written under this ``cache_control`` value lives."""
    if isinstance(cache_control, dict):
        ttl = cache_control.get("ttl")
        if isinstance(ttl, str):
            return _TTLS.get(ttl, default)
    return default


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


def _salt(value: bytes) -> int:
    """A large id that no tokenizer produces, derived from ``value``."""
    # 40 bits shifted past every tokenizer's ids (< 2**32, CRC-32 estimates
    # included): the XOR stays below 2**63, inside array('q')
    return (int.from_bytes(hashlib.blake2b(value, digest_size=5).digest(), "big") | 1) << 22


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
    obj = loads(body, path=path) if d is None or model is None or d.provider == "anthropic" else None
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
    return generic_request([s.kind for s in segs], ids, prompt_tail(tok, d.name), time, label, output, key,
                           marked if explicit else None)


def generic_request(kinds: Sequence[str], ids: Sequence[array[int]], tail: array[int], time: float | None,
                    label: Hashable | None, output: Sequence[int] = (), key: Hashable = b"",
                    marked: Sequence[bool] | None = None) -> SimRequest:
    """A non-Anthropic :class:`SimRequest` from each segment's kind and billed
    ids (what :func:`cache_prompt` computes per segment; ``fidelity scan``
    memoises them per element and assembles with :func:`generic_assemble`,
    the same loop, so both build the same request). ``marked``: DashScope
    explicit caching, per segment whether it carries a marker (``None``:
    implicit caching)."""
    return generic_assemble(kinds, ids, tail, time, label, output, key, marked)[0]


@dataclass
class Assembled:
    """What an assembled request leaves for the next one of its session, so
    that the next one copies the prompt of the parts both share (a slice of
    an array, in C) instead of walking them again: a session re-sends its
    whole history with every request (:func:`generic_assemble`,
    :func:`anthropic_assemble`).

    ``parts``: each part as it was given (a segment's ids array, an
    Anthropic block tuple), compared by identity; ``tokens``: the request's
    prompt (read-only: the simulator holds it); per part ``i``, ``starts[i]``
    is the token offset where it begins and ``n_ends[i]`` / ``n_marks[i]``
    how many block ends and breakpoints come before it (each list one longer
    than ``parts``); ``mods``: how a part was changed while assembling
    (Anthropic: the tool-use prompt cut from the first tool, the request
    pieces joined to the first message, a level's salt), by part index;
    ``head``: the ids ahead of the first part; ``kinds`` and ``flags``: each
    part's kind and DashScope marker flag (:func:`generic_assemble`)."""

    parts: list[Any]
    tokens: array[int]
    starts: list[int]
    n_ends: list[int]
    ends: list[int]
    n_marks: list[int]
    marks: list[Any]
    kinds: list[Any] = field(default_factory=list)
    mods: dict[int, Any] = field(default_factory=dict)
    head: Any = None
    flags: list[bool] | None = None
    #: Anthropic: the params ids, model and tool-prompt cut the head and cut came from
    params: Any = None
    model: str = ""
    cut: int = 0


def _same_parts(parts: Sequence[Any], prev: Sequence[Any], same: int) -> int:
    """How many leading ``parts`` are the very objects of ``prev``: ``same``
    (the caller's count) when it holds, checked in C; else counted."""
    same = max(0, min(same, len(parts), len(prev)))
    if all(map(is_, parts[:same], prev[:same])):
        return same
    return next((i for i in range(same) if parts[i] is not prev[i]), same)


def _resume(prev: Assembled, j: int) -> tuple[Any, ...]:
    """The first ``j`` parts of ``prev``'s assembled prompt: its ids, block
    ends and marks up to there, and the per-part offsets into them."""
    return (prev.tokens[: prev.starts[j]], prev.ends[: prev.n_ends[j]], prev.marks[: prev.n_marks[j]],
            prev.starts[: j + 1], prev.n_ends[: j + 1], prev.n_marks[: j + 1])


def _same_prefix(a: Sequence[Any], b: Sequence[Any], j: int) -> int:
    """``j``, or less: how many of the first ``j`` items of ``a`` and ``b`` are equal."""
    if a[:j] == b[:j]:
        return j
    return next(i for i in range(j) if i >= len(a) or i >= len(b) or a[i] != b[i])


def generic_assemble(kinds: Sequence[str], ids: Sequence[array[int]], tail: array[int], time: float | None,
                     label: Hashable | None, output: Sequence[int] = (), key: Hashable = b"",
                     marked: Sequence[bool] | None = None, prev: Assembled | None = None,
                     same: int = 0) -> tuple[SimRequest, Assembled]:
    """:func:`generic_request`, and what it leaves for the next request:
    with ``prev`` (the previous request's :class:`Assembled`) the leading
    parts that are ``prev``'s own (the same ids objects, kinds and marks; at
    most ``same`` of them) are copied from its prompt, and only the rest is
    walked."""
    kinds = list(kinds)
    flags = list(marked) if marked is not None else None
    n = min(len(kinds), len(ids))
    j = 0
    if prev is not None and same:
        j = _same_parts(ids, prev.parts, same)
        j = _same_prefix(kinds, prev.kinds, j)
        if flags is not None or prev.flags is not None:
            j = _same_prefix(flags or [], prev.flags or [], j) if flags is not None and prev.flags is not None else 0
    if j:
        flat, ends, marks, starts, n_ends, n_marks = _resume(prev, j)  # type: ignore[arg-type]
    else:
        flat = array(tokens.TOKEN_TYPECODE)
        ends, marks, starts, n_ends, n_marks = [], [], [0], [0], [0]
    for i in range(j, n):
        flat.extend(ids[i])
        if kinds[i] != "params" and len(flat) and (not ends or ends[-1] != len(flat)):
            ends.append(len(flat))
            if flags is not None and flags[i]:
                marks.append(len(flat))
        starts.append(len(flat))
        n_ends.append(len(ends))
        n_marks.append(len(marks))
    # the reply priming the provider appends after the last message (OpenAI: 3)
    flat.extend(tail)
    explicit = marked is not None
    req = SimRequest(flat, time, tuple(marks), (), tuple(ends) if explicit else (), output, key, label)
    state = Assembled(list(ids[:n]), flat, starts, n_ends, ends, n_marks, marks, kinds[:n], flags=flags)
    return req, state


# --------------------------------------------------------------------------- Anthropic

#: setting -> the first level it invalidates (the one table: :mod:`fidelity.cache.invalidation`)
_LEVEL_SALTS = ANTHROPIC_INVALIDATES
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


def _head_len(params_ids: Sequence[int]) -> int:
    """Length of the fixed per-request run that leads an Anthropic params
    segment's estimate (the same in every request: it goes first)."""
    if not len(params_ids) or params_ids[0] >= 0:
        return 0
    return _run(params_ids, params_ids[0])


def _run(ids: Sequence[int], value: int) -> int:
    """How many leading ids equal ``value``."""
    if not len(ids) or ids[0] != value:
        return 0
    n = 1
    while n < len(ids) and ids[n] == value:  # runs are short (a few hundred ids at most)
        n += 1
    return n


def _tool_prompt_moved(model: str, tools_ids: Sequence[int]) -> int:
    """How many tokens of the tool-use system prompt's estimate, which leads
    the first tool's ids, depend on ``tool_choice`` (the count above the
    smallest one any choice gives: :func:`fidelity.tokens.framing_estimate.anthropic_tool_prompt`).
    ``tool_choice`` invalidates the messages cache only (the invalidation
    table), so that part is placed ahead of the first message."""
    from ..tokens.framing_estimate import DOC, anthropic_tool_prompt

    n = _run(tools_ids, DOC.id)
    if not n:
        return 0
    shared = min(anthropic_tool_prompt(model, choice) for choice in (None, {"type": "any"}))
    return max(0, n - shared)


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
    salts = [(m.key, body[m.value_start : m.end]) for m in iter_members(body, skip_ws(body, 0))]
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


def anthropic_request(params_ids: array[int], blocks: Sequence[tuple[str, array[int], list[tuple[int, Any]]]],
                      members: Sequence[tuple[str, bytes]], obj: dict[str, Any], model: str, time: float | None,
                      label: Hashable | None, output: Sequence[int] = ()) -> SimRequest:
    """Anthropic's :class:`SimRequest` from the params segment's ids, each
    block's ``(level, ids, [(end, cache_control)])`` in cache order (tools,
    then system, then messages) and the body's top-level members ``(key,
    value bytes)`` (only the setting members are read).

    The request-level pieces of the estimate (the params segment: a fixed
    per-request count, then thinking and ``output_config`` pieces) are
    placed as follows: the fixed run first (the same in every request), the
    rest ahead of the first message, since those settings invalidate the
    messages cache only (the invalidation table). The tool-use system
    prompt's count depends on ``tool_choice`` (346 or 313 tokens...), which
    also invalidates the messages cache only: the count every choice shares
    stays ahead of the tools, the part that varies joins the rest
    (:func:`_tool_prompt_moved`). The work is :func:`anthropic_assemble`'s
    (the scan's element path calls it with the previous request's state)."""
    return anthropic_assemble(params_ids, blocks, members, obj, model, time, label, output)[0]


#: Anthropic's levels in cache order
_RANK = {"tools": 0, "system": 1, "messages": 2}


def _rank(block: tuple[str, Any, Any]) -> int:
    return _RANK[block[0]]


def anthropic_images(messages: Any) -> int:
    """Image blocks across ``messages`` (image presence is a setting the
    invalidation table names)."""
    images = 0
    for msg in messages or ():
        content = msg.get("content") if isinstance(msg, dict) else None
        if isinstance(content, list):
            images += sum(1 for part in content if isinstance(part, dict) and part.get("type") == "image")
    return images


def anthropic_assemble(params_ids: array[int], blocks: Sequence[tuple[str, array[int], list[tuple[int, Any]]]],
                       members: Sequence[tuple[str, bytes]], obj: dict[str, Any], model: str, time: float | None,
                       label: Hashable | None, output: Sequence[int] = (), images: int | None = None,
                       prev: Assembled | None = None, same: int = 0,
                       cache_key: Hashable | None = None) -> tuple[SimRequest, Assembled]:
    """:func:`anthropic_request`, and what it leaves for the next request
    (:class:`Assembled`): with ``prev``, the leading blocks that are
    ``prev``'s own block tuples (at most ``same`` of them) and were changed
    alike (the head, the cut tool prompt, the joined request pieces, the
    salts) are copied from its prompt, and only the rest is walked.
    ``images``: the image blocks of ``obj``'s messages when the caller has
    counted them (:func:`anthropic_images`). Blocks out of cache order are
    refused (``ValueError``). ``cache_key``: the request's ``key`` (default
    ``("anthropic", model)``)."""
    if prev is not None and prev.params is params_ids and prev.model == model:
        n = len(prev.head)
    else:
        n = _head_len(params_ids)
    head, rest = params_ids[:n], params_ids[n:]
    nb = len(blocks)
    # the first block of each level: blocks come in cache order
    first_tool = 0 if nb and blocks[0][0] == "tools" else None
    first_msg: int | None = bisect_left(blocks, 2, key=_rank)
    first_msg = None if first_msg == nb else first_msg
    cut = 0
    if first_tool is not None:
        if prev is not None and prev.parts and prev.parts[0] is blocks[0] and prev.model == model:
            cut = prev.cut
        else:
            cut = _tool_prompt_moved(model, blocks[first_tool][1])
        if cut:  # the tool_choice-dependent part of the tool-use prompt
            rest = blocks[first_tool][1][:cut] + rest
    salts: dict[str, list[bytes]] = {"system": [], "messages": []}
    for key, value in members:
        level = _LEVEL_SALTS.get(key)
        if level is not None:
            salts[level].append(key.encode() + b"=" + value)
    if images is None:
        images = anthropic_images(obj.get("messages"))
    if images:
        salts[IMAGES_LEVEL].append(b"images=%d" % images)
    extra = None
    if len(rest) and first_msg is None:
        extra = ("messages", rest, [(len(rest), None)])
    joined = len(rest) if first_msg is not None else 0

    def size(idx: int) -> int:
        if idx == nb:
            return len(extra[1]) if extra is not None else 0
        got = len(blocks[idx][1])
        return got - cut if idx == first_tool else got + joined if idx == first_msg else got

    def first_of(rank: int) -> int | None:
        lo = bisect_left(blocks, rank, key=_rank)
        hi = bisect_left(blocks, rank + 1, lo, key=_rank)
        if rank == 2 and extra is not None:
            hi += 1
        return next((i for i in range(lo, hi) if size(i)), None)

    first_sys, first_m = first_of(1), first_of(2)
    targets: dict[int, list[bytes]] = {}
    # a level's salt goes on its first token; without a system prompt the
    # system-level salt falls on the first message (it invalidates both)
    for level, at in (("system", first_sys if first_sys is not None else first_m), ("messages", first_m)):
        if at is not None and salts[level]:
            targets.setdefault(at, []).extend(salts[level])
    mods: dict[int, Any] = {i: (None, None, b"|".join(t)) for i, t in targets.items()}
    if cut and first_tool is not None:
        mods[first_tool] = (cut, None, mods.get(first_tool, (0, None, None))[2])
    if joined and first_msg is not None:
        mods[first_msg] = (0, rest.tobytes(), mods.get(first_msg, (0, None, None))[2])
    parts = list(blocks)
    if extra is not None:
        parts.append(extra)
    j = 0
    if prev is not None and same and prev.head == head:
        j = _same_parts(parts, prev.parts, same)
        for idx in set(mods) | set(prev.mods):
            if idx < j and mods.get(idx) != prev.mods.get(idx):
                j = idx
    if j:
        flat, ends, marks, starts, n_ends, n_marks = _resume(prev, j)  # type: ignore[arg-type]
    else:
        flat = array(tokens.TOKEN_TYPECODE, head)
        ends, marks, starts, n_ends, n_marks = [], [], [len(flat)], [0], [0]
    last = _RANK[parts[j - 1][0]] if j else 0
    for idx in range(j, len(parts)):
        level, b_ids, b_ends = parts[idx]
        rank = _RANK[level]
        if rank < last:
            raise ValueError("Anthropic blocks out of cache order (tools, system, messages)")
        last = rank
        shift = 0
        if idx == first_tool and cut:
            b_ids, shift = b_ids[cut:], -cut
        elif idx == first_msg and joined:
            b_ids, shift = rest + b_ids, joined
        start = len(flat)
        flat.extend(b_ids)
        if idx in targets and len(b_ids):
            flat[start] = flat[start] ^ _salt(b"|".join(targets[idx]))
        for e, cc in b_ends:
            at = start + e + shift
            if at and (not ends or ends[-1] != at):
                ends.append(at)
            if isinstance(cc, dict) and at:
                marks.append((at, ttl_seconds(cc)))
        starts.append(len(flat))
        n_ends.append(len(ends))
        n_marks.append(len(marks))
    state = Assembled(parts, flat, starts, n_ends, ends, n_marks, marks, [], mods, head, None, params_ids, model, cut)
    top = obj.get("cache_control")
    every = marks + [(len(flat), ttl_seconds(top))] if isinstance(top, dict) and len(flat) else marks
    best: dict[int, float] = {}
    for at, ttl in every:
        best[at] = max(best.get(at, 0.0), ttl)
    bps = tuple(sorted(best))
    req = SimRequest(flat, time, bps, tuple(best[b] for b in bps), tuple(ends), output,
                     ("anthropic", model) if cache_key is None else cache_key, label)
    return req, state
