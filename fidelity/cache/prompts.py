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

from .. import providers, tokens, wire
from ..errors import InputError
from ..jsonbytes import element_spans, iter_members, loads, skip_value, skip_ws
from ..wire import Segment
from .simulator import SimRequest

__all__ = ["CachePrompt", "cache_prompt", "strip_markers", "ttl_seconds", "MARKER"]

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
                 output: Sequence[int] = (), path: str | None = None) -> CachePrompt:
    """``body`` as its provider's cache sees it (see the module docstring).

    ``dialect`` defaults to detection from the body; ``model`` to the body's
    ``model``; ``output`` is the reply's token ids where known (DeepSeek and
    engines keep it in the cache)."""
    obj = loads(body, path=path) if isinstance(body, (bytes, bytearray)) else None
    body = bytes(body)
    d = wire.get(dialect) if dialect else wire.detect(obj, path=path)
    if model is None:
        model = obj.get("model") if isinstance(obj, dict) and isinstance(obj.get("model"), str) else None
        if model is None:
            raise InputError("the body names no model; pass the model", path=path)
    tok = tokens.for_model(model, d.provider)
    if d.provider == "anthropic":
        req = _anthropic(body, obj, tok, model, time, label, output)
        cm = providers.get("anthropic").cache_model or "anthropic"
    else:
        explicit = d.provider == "dashscope" and MARKER in body
        req = _generic(d, body, tok, time, label, output, explicit, path)
        cm = "dashscope-explicit" if explicit else (providers.get(d.provider).cache_model or d.provider)
    return CachePrompt(req, d.name, d.provider, cm, model, tok.name, tok.estimated)


def _generic(d: wire.Dialect, body: bytes, tok: tokens.Tokenizer, time: float | None, label: Hashable | None,
             output: Sequence[int], explicit: bool, path: str | None) -> SimRequest:
    try:
        segs = d.cache_view(body)
    except InputError as exc:
        raise (exc.at(path) if path else exc) from None
    ids = [array(tokens.TOKEN_TYPECODE) if s.kind == "params" else t
           for s, t in zip(segs, tokens.segment_tokens(tok, segs))]
    key = b"".join(s.data for s in segs if s.kind == "params")
    flat = array(tokens.TOKEN_TYPECODE)
    ends: list[int] = []
    marks: list[int] = []
    for seg, seg_ids in zip(segs, ids):
        flat.extend(seg_ids)
        if seg.kind != "params" and len(flat) and (not ends or ends[-1] != len(flat)):
            ends.append(len(flat))
            if explicit and MARKER in seg.data:
                marks.append(len(flat))
    return SimRequest(flat, time, tuple(marks), (), tuple(ends) if explicit else (), output, key, label)


# --------------------------------------------------------------------------- Anthropic

_LEVEL_SALTS = {"tool_choice": "messages", "thinking": "messages", "output_config": "messages", "speed": "system"}


def _as_text_list(body: bytes, s: int, e: int) -> bytes:
    """A message ``{"role", "content": "text"}`` keyed as its equivalent
    list form ``"content": [{"type": "text", "text": "text"}]``: Anthropic
    reads a string content as one text block, and a client that moves its
    breakpoint rewrites the previous turn from the list form (with the
    marker) to the string form (without): no content change."""
    for m in iter_members(body, s):
        if m.key == "content":
            return (body[s : m.value_start] + b'[{"type":"text","text":' + body[m.value_start : m.end]
                    + b"}]" + body[m.end : e])
    return body[s:e]


def _anthropic(body: bytes, obj: Any, tok: tokens.Tokenizer, model: str, time: float | None,
               label: Hashable | None, output: Sequence[int]) -> SimRequest:
    if not isinstance(obj, dict):
        raise InputError("an Anthropic request body must be a JSON object")
    blocks: list[tuple[str, bytes, Any]] = []  # (level, bytes, cache_control or None)
    tools = obj.get("tools")
    if isinstance(tools, list):
        for (s, e), t in zip(element_spans(body, "/tools"), tools):
            blocks.append(("tools", body[s:e], t.get("cache_control") if isinstance(t, dict) else None))
    system = obj.get("system")
    if isinstance(system, list):
        for (s, e), b in zip(element_spans(body, "/system"), system):
            blocks.append(("system", body[s:e], b.get("cache_control") if isinstance(b, dict) else None))
    elif system is not None:
        for m in iter_members(body, skip_ws(body, 0)):
            if m.key == "system":  # a string is one text block (the same key as its list form)
                blocks.append(("system", b'{"type":"text","text":' + body[m.value_start : m.end] + b"}", None))
    messages = obj.get("messages")
    images = 0
    if isinstance(messages, list):
        for i, ((s, e), msg) in enumerate(zip(element_spans(body, "/messages"), messages)):
            content = msg.get("content") if isinstance(msg, dict) else None
            if isinstance(content, list) and content:
                spans = element_spans(body, f"/messages/{i}/content")
                cuts = [ce for _, ce in spans[:-1]]
                starts = [s] + cuts
                stops = cuts + [e]
                for (bs, be), part in zip(zip(starts, stops), content):
                    cc = part.get("cache_control") if isinstance(part, dict) else None
                    if isinstance(part, dict) and part.get("type") == "image":
                        images += 1
                    blocks.append(("messages", body[bs:be], cc))
            elif isinstance(content, str):
                blocks.append(("messages", _as_text_list(body, s, e), None))
            else:
                blocks.append(("messages", body[s:e], None))
    salts: dict[str, list[bytes]] = {"system": [], "messages": []}
    for m in iter_members(body, skip_ws(body, 0)):
        level = _LEVEL_SALTS.get(m.key)
        if level is not None:
            salts[level].append(m.key.encode() + b"=" + body[m.value_start : m.end])
    if images:
        salts["messages"].append(b"images=%d" % images)
    segs = [Segment("message", i, "", strip_markers(data)) for i, (_, data, _) in enumerate(blocks)]
    ids = tokens.segment_tokens(tok, segs)
    first: dict[str, int] = {}
    for idx, ((level, _, _), seg_ids) in enumerate(zip(blocks, ids)):
        if len(seg_ids) and level not in first:
            first[level] = idx
    targets: dict[int, list[bytes]] = {}
    # a level's salt goes on its first token; without a system prompt the
    # system-level salt falls on the first message (it invalidates both)
    for level, at in (("system", first.get("system", first.get("messages"))), ("messages", first.get("messages"))):
        if at is not None and salts[level]:
            targets.setdefault(at, []).extend(salts[level])
    flat = array(tokens.TOKEN_TYPECODE)
    ends: list[int] = []
    marks: list[tuple[int, float]] = []
    for idx, ((_, _, cc), seg_ids) in enumerate(zip(blocks, ids)):
        start = len(flat)
        flat.extend(seg_ids)
        if idx in targets:
            flat[start] = flat[start] ^ _salt(b"|".join(targets[idx]))
        if len(flat) and (not ends or ends[-1] != len(flat)):
            ends.append(len(flat))
        if isinstance(cc, dict) and len(flat):
            marks.append((len(flat), ttl_seconds(cc)))
    top = obj.get("cache_control")
    if isinstance(top, dict) and len(flat):
        marks.append((len(flat), ttl_seconds(top)))
    best: dict[int, float] = {}
    for at, ttl in marks:
        best[at] = max(best.get(at, 0.0), ttl)
    bps = tuple(sorted(best))
    return SimRequest(flat, time, bps, tuple(best[b] for b in bps), tuple(ends), output, ("anthropic", model), label)
