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
  its segments tokenized as :func:`fidelity.diff.prompt_token_ids` does;
  the params segment (model, OpenAI's ``prompt_cache_key``, reasoning and
  tool-choice settings) is the partition key.
"""

from __future__ import annotations

import hashlib
from array import array
from collections.abc import Hashable, Sequence
from dataclasses import dataclass
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
           "generic_request", "anthropic_request", "anthropic_block_ends"]

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
    (:func:`fidelity.diff.prompt_token_ids` with the dialect: OpenAI's
    framing, media by the provider's rule, the calibrated Claude and Gemini
    estimates), so that replay, the simulator, ``diff`` and ``score`` count
    the same tokens."""
    body = bytes(body)
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
    tok = billing_tokenizer(tokens.for_model(model, prov), d.name)
    try:
        segs = wire.cache_view_at(d, body, endpoint)
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
        from ..diff import prompt_token_ids

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
    memoises them per element and assembles here, so both build the same
    request). ``marked``: DashScope explicit caching, per segment whether it
    carries a marker (``None``: implicit caching)."""
    flat = array(tokens.TOKEN_TYPECODE)
    ends: list[int] = []
    marks: list[int] = []
    for i, (kind, seg_ids) in enumerate(zip(kinds, ids)):
        flat.extend(seg_ids)
        if kind != "params" and len(flat) and (not ends or ends[-1] != len(flat)):
            ends.append(len(flat))
            if marked is not None and marked[i]:
                marks.append(len(flat))
    # the reply priming the provider appends after the last message (OpenAI: 3)
    flat.extend(tail)
    explicit = marked is not None
    return SimRequest(flat, time, tuple(marks), (), tuple(ends) if explicit else (), output, key, label)


# --------------------------------------------------------------------------- Anthropic

#: setting -> the first level it invalidates (the one table: :mod:`fidelity.cache.invalidation`)
_LEVEL_SALTS = ANTHROPIC_INVALIDATES
_LEVELS = {"tools": "tools", "system": "system", "message": "messages"}


def _block_ends(tok: tokens.Tokenizer, d: wire.Dialect, model: str, seg: Segment, value: Any,
                seg_ids: array[int], blocks: Sequence[bytes] | None = None) -> list[tuple[int, Any]]:
    """(offset inside the segment, ``cache_control``) at the end of each
    content block of one segment (a tool, a system block, a message whose
    content is a list: Anthropic's unit for the 20-block lookback). Block
    lengths come from the same billed-ids function, each block counted as a
    one-block message less the per-message overhead; when they do not add up
    to the message's own count, the message is one block. ``blocks``: the
    bytes of each element of ``content`` when the caller has them (else
    they are sliced from the segment)."""
    content = value.get("content") if isinstance(value, dict) and seg.kind == "message" else None
    def cc_of(v: Any) -> Any:
        return v.get("cache_control") if isinstance(v, dict) else None

    if not isinstance(content, list) or len(content) < 2:
        cc = cc_of(value)
        if isinstance(content, list) and content:
            cc = cc_of(content[0])
        return [(len(seg_ids), cc)]
    if blocks is None:
        blocks = [seg.data[s:e] for s, e in element_spans(seg.data, "/content")]
    probe = [Segment("message", 0, "", b'{"role":"user","content":[]}')]
    probe += [Segment("message", i + 1, "", strip_markers(b)) for i, b in enumerate(blocks)]
    got = [_ids(tok, [probe[0], seg_], d, model, _BLOCK_MEMO, 8192)[1] for seg_ in probe[1:]]
    got.insert(0, _ids(tok, probe[:1], d, model, _BLOCK_MEMO, 8192)[0])
    overhead = len(got[0])
    out: list[tuple[int, Any]] = []
    at = overhead
    for block, block_ids in zip(content, got[1:]):
        at += len(block_ids) - overhead
        out.append((at, cc_of(block)))
    if at != len(seg_ids):
        return [(len(seg_ids), next((cc_of(b) for b in reversed(content) if cc_of(b) is not None), None))]
    return out


def _head_len(params_ids: Sequence[int]) -> int:
    """Length of the fixed per-request run that leads an Anthropic params
    segment's estimate (the same in every request: it goes first)."""
    n = 0
    while n < len(params_ids) and params_ids[n] == params_ids[0] and params_ids[0] < 0:
        n += 1
    return n


def _tool_prompt_moved(model: str, tools_ids: Sequence[int]) -> int:
    """How many tokens of the tool-use system prompt's estimate, which leads
    the first tool's ids, depend on ``tool_choice`` (the count above the
    smallest one any choice gives: :func:`fidelity.tokens.framing_estimate.anthropic_tool_prompt`).
    ``tool_choice`` invalidates the messages cache only (the invalidation
    table), so that part is placed ahead of the first message."""
    from ..tokens.framing_estimate import DOC, anthropic_tool_prompt

    n = 0
    while n < len(tools_ids) and tools_ids[n] == DOC.id:
        n += 1
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
    block's ``(level, ids, [(end, cache_control)])`` and the body's top-level
    members ``(key, value bytes)`` (only the setting members are read).

    The request-level pieces of the estimate (the params segment: a fixed
    per-request count, then thinking and ``output_config`` pieces) are
    placed as follows: the fixed run first (the same in every request), the
    rest ahead of the first message, since those settings invalidate the
    messages cache only (the invalidation table). The tool-use system
    prompt's count depends on ``tool_choice`` (346 or 313 tokens...), which
    also invalidates the messages cache only: the count every choice shares
    stays ahead of the tools, the part that varies joins the rest
    (:func:`_tool_prompt_moved`)."""
    n = _head_len(params_ids)
    head, rest = params_ids[:n], params_ids[n:]
    blocks = list(blocks)
    first_tool = next((i for i, b in enumerate(blocks) if b[0] == "tools"), None)
    if first_tool is not None:
        _, b_ids, ends_in = blocks[first_tool]
        k = _tool_prompt_moved(model, b_ids)
        if k:  # the tool_choice-dependent part of the tool-use prompt
            blocks[first_tool] = ("tools", b_ids[k:], [(e - k, cc) for e, cc in ends_in])
            rest = b_ids[:k] + rest
    salts: dict[str, list[bytes]] = {"system": [], "messages": []}
    for key, value in members:
        level = _LEVEL_SALTS.get(key)
        if level is not None:
            salts[level].append(key.encode() + b"=" + value)
    images = 0
    for msg in obj.get("messages") or ():
        content = msg.get("content") if isinstance(msg, dict) else None
        if isinstance(content, list):
            images += sum(1 for part in content if isinstance(part, dict) and part.get("type") == "image")
    if images:
        salts[IMAGES_LEVEL].append(b"images=%d" % images)
    first_msg = next((i for i, b in enumerate(blocks) if b[0] == "messages"), None)
    if len(rest):
        if first_msg is None:
            blocks.append(("messages", rest, [(len(rest), None)]))
        else:
            level, b_ids, ends_in = blocks[first_msg]
            joined = array(tokens.TOKEN_TYPECODE, rest)
            joined.extend(b_ids)
            blocks[first_msg] = (level, joined, [(len(rest) + e, cc) for e, cc in ends_in])
    first: dict[str, int] = {}
    for idx, (level, b_ids, _) in enumerate(blocks):
        if len(b_ids) and level not in first:
            first[level] = idx
    targets: dict[int, list[bytes]] = {}
    # a level's salt goes on its first token; without a system prompt the
    # system-level salt falls on the first message (it invalidates both)
    for level, at in (("system", first.get("system", first.get("messages"))), ("messages", first.get("messages"))):
        if at is not None and salts[level]:
            targets.setdefault(at, []).extend(salts[level])
    flat = array(tokens.TOKEN_TYPECODE, head)
    ends: list[int] = []
    marks: list[tuple[int, float]] = []
    for idx, (_, b_ids, b_ends) in enumerate(blocks):
        start = len(flat)
        flat.extend(b_ids)
        if idx in targets and len(b_ids):
            flat[start] = flat[start] ^ _salt(b"|".join(targets[idx]))
        for e, cc in b_ends:
            at = start + e
            if at and (not ends or ends[-1] != at):
                ends.append(at)
            if isinstance(cc, dict) and at:
                marks.append((at, ttl_seconds(cc)))
    top = obj.get("cache_control")
    if isinstance(top, dict) and len(flat):
        marks.append((len(flat), ttl_seconds(top)))
    best: dict[int, float] = {}
    for at, ttl in marks:
        best[at] = max(best.get(at, 0.0), ttl)
    bps = tuple(sorted(best))
    return SimRequest(flat, time, bps, tuple(best[b] for b in bps), tuple(ends), output, ("anthropic", model), label)
