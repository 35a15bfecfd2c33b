"""Token ids for the cache simulator, built from the scan's memo: the same
:class:`~fidelity.cache.simulator.SimRequest` that
:func:`fidelity.cache.prompts.cache_prompt` computes, without its per-request
byte scan.

``cache_prompt`` slices a body's exact bytes with the Python JSON scanner and
tokenizes each slice (3 to 12 MB/s on the synthetic log). A scan sees the same
history again and again, so this module works per *cache-view element*
(a tool, a system block, a message): an element's token ids (and, for
Anthropic, its content blocks, breakpoints and image count) are computed once
per unique element bytes and kept in the worker's :class:`~.memo.TokenMemo`;
the elements a request shares with its partition's previous request are
reused without even hashing. A request then costs an ``array`` concatenation.

Exactness: an element's bytes are ``orjson.dumps`` of its value, which are
the exact slices ``cache_prompt`` sees when the body's bytes are
``orjson.dumps`` of the parsed body (a log line that holds the body as a JSON
object, or as text written compactly). A body written any other way
(spaces after separators, other escapes), a dialect the fast view does not
know and a DashScope body with explicit ``cache_control`` markers go through
``cache_prompt`` itself. ``tests/test_scan_simulator.py`` asserts equal ids on
recorded bodies and on the generated log.
"""

from __future__ import annotations

from array import array
from collections.abc import Hashable, Sequence
from dataclasses import dataclass, replace
from typing import Any

import orjson

from .. import providers, tokens
from ..cache.prompts import _LEVEL_SALTS, MARKER, _as_text_list, _salt, cache_prompt, strip_markers, ttl_seconds
from ..cache.simulator import SimRequest
from ..jsonbytes import element_spans
from ..tokens._parallel import encode_texts
from .memo import TokenMemo
from .view import SUPPORTED, Item, dumps_value

__all__ = ["Part", "PromptIds", "cache_model_of"]

_TYPECODE = tokens.TOKEN_TYPECODE


@dataclass(frozen=True)
class Part:
    """One cache-view element, tokenized: its blocks' ids (one block for
    every dialect but Anthropic, whose message content blocks are the units
    of the 20-block lookback), each block's ``cache_control`` lifetime in
    seconds (``None``: no breakpoint) and level, and its image parts."""

    ids: tuple[array[int], ...]
    ttls: tuple[float | None, ...] = (None,)
    level: str = ""
    images: int = 0


def cache_model_of(provider: str, explicit: bool = False) -> str:
    """The cache model name ``cache_prompt`` picks for a provider."""
    if explicit:
        return "dashscope-explicit"
    if provider == "anthropic":
        return providers.get("anthropic").cache_model or "anthropic"
    return providers.get(provider).cache_model or provider


class PromptIds:
    """Builds each request's :class:`SimRequest` for one partition (requests
    fed in order, so that the previous request's elements are reused)."""

    def __init__(self, tokenizer: tokens.Tokenizer, memo: TokenMemo) -> None:
        self.tok = tokenizer
        self.memo = memo
        self._prev_items: Sequence[Item] = ()
        self._prev_parts: list[Part] = []
        self._prev_texts: list[str | None] = []
        #: requests that went through ``cache_prompt`` (not the fast path)
        self.slow = 0

    # -- tokens ----------------------------------------------------------------
    def _ids(self, data: bytes, text: str | None = None) -> array[int]:
        key = (self.tok.name, data if text is None else b"\x00text\x00" + text.encode("utf-8", "surrogatepass"))
        hit = self.memo.get(key)
        if hit is not None:
            return hit
        ids = encode_texts(self.tok, [data if text is None else text], threads=1)[0]
        if not isinstance(ids, array):
            ids = array(_TYPECODE, ids)
        self.memo.put(key, ids, len(data) + (len(text) if text else 0))
        return ids

    # -- the request -------------------------------------------------------------
    def build(self, rec: Any, items: Sequence[Item], shared: int, time: float | None,
              label: Hashable) -> tuple[str, SimRequest]:
        """The cache model name and the simulator request of ``rec`` (whose
        fast view is ``items``; ``shared``: leading elements equal to the
        previous request's, from :func:`.view.shared_items`)."""
        d = rec.dialect
        body = rec.raw_body
        canonical = body is None
        if body is not None:
            try:
                canonical = orjson.dumps(rec.body) == body
            except TypeError:
                canonical = False
        explicit = d.provider == "dashscope" and MARKER in (body if body is not None else orjson.dumps(rec.body))
        if not canonical or explicit or d.name not in SUPPORTED:
            return self._slow(rec, time, label)
        if d.name == "anthropic-messages":
            return cache_model_of("anthropic"), self._anthropic(rec.body, items, shared, time, label)
        return cache_model_of(d.provider), self._generic(d, rec.body, items, shared, time, label)

    def _slow(self, rec: Any, time: float | None, label: Hashable) -> tuple[str, SimRequest]:
        self.slow += 1
        self._prev_items, self._prev_parts, self._prev_texts = (), [], []
        body = rec.raw_body if rec.raw_body is not None else orjson.dumps(rec.body)
        cp = cache_prompt(body, dialect=rec.dialect.name, model=rec.model, time=time, label=label)
        return cp.cache_model, replace(cp.request, key="")

    def _reuse(self, items: Sequence[Item], shared: int, texts: list[str | None] | None = None) -> list[Part]:
        k = shared if items is not self._prev_items else len(items)
        k = min(k, len(self._prev_parts))
        if texts is not None:  # a template text may depend on its neighbours: reuse only equal texts
            while k and self._prev_texts[:k] != texts[:k]:
                k -= 1
        return self._prev_parts[:k]

    def _generic(self, d: Any, obj: dict[str, Any], items: Sequence[Item], shared: int, time: float | None,
                 label: Hashable) -> SimRequest:
        texts: list[str | None] | None = None
        templater = getattr(d, "templater", None)
        if templater is not None:
            found = templater(obj)
            texts = [found.get(("tools", it.index)) if it.kind == "tools" else found.get(("message", it.where[1]))
                     for it in items]
        parts = self._reuse(items, shared, texts)
        for i in range(len(parts), len(items)):
            text = texts[i] if texts is not None else None
            parts.append(Part((self._ids(dumps_value(items[i].value), text),)))
        self._prev_items, self._prev_parts, self._prev_texts = items, parts, texts or []
        flat = array(_TYPECODE)
        for p in parts:
            flat.extend(p.ids[0])
        return SimRequest(flat, time, (), (), (), (), "", label)

    # -- Anthropic (mirrors fidelity.cache.prompts._anthropic) -------------------
    def _part(self, it: Item) -> Part:
        v = it.value
        data = dumps_value(v)
        if it.kind == "tools" or (it.kind == "system" and isinstance(it.where[-1], int)):
            cc = v.get("cache_control") if isinstance(v, dict) else None
            return Part((self._ids(strip_markers(data)),), (_ttl(cc),), it.kind)
        if it.kind == "system":  # a string system prompt is one text block
            return Part((self._ids(strip_markers(b'{"type":"text","text":' + data + b"}")),), (None,), "system")
        content = v.get("content") if isinstance(v, dict) else None
        if isinstance(content, list) and content:
            # one part: the whole message is its block (no byte scan needed)
            cuts = [ce for _, ce in element_spans(data, "/content")[:-1]] if len(content) > 1 else []
            starts, ends = [0, *cuts], [*cuts, len(data)]
            ids, ttls, images = [], [], 0
            for bs, be, part in zip(starts, ends, content):
                cc = part.get("cache_control") if isinstance(part, dict) else None
                if isinstance(part, dict) and part.get("type") == "image":
                    images += 1
                ids.append(self._ids(strip_markers(data[bs:be])))
                ttls.append(_ttl(cc))
            return Part(tuple(ids), tuple(ttls), "messages", images)
        if isinstance(content, str):
            return Part((self._ids(strip_markers(_as_text_list(data, 0, len(data)))),), (None,), "messages")
        return Part((self._ids(strip_markers(data)),), (None,), "messages")

    def _anthropic(self, obj: dict[str, Any], items: Sequence[Item], shared: int, time: float | None,
                   label: Hashable) -> SimRequest:
        parts = self._reuse(items, shared)
        for i in range(len(parts), len(items)):
            parts.append(self._part(items[i]))
        self._prev_items, self._prev_parts, self._prev_texts = items, parts, []
        salts: dict[str, list[bytes]] = {"system": [], "messages": []}
        for key, value in obj.items():
            level = _LEVEL_SALTS.get(key)
            if level is not None:
                salts[level].append(key.encode() + b"=" + dumps_value(value))
        images = sum(p.images for p in parts)
        if images:
            salts["messages"].append(b"images=%d" % images)
        first: dict[str, int] = {}
        idx = 0
        for p in parts:
            for ids in p.ids:
                if len(ids) and p.level not in first:
                    first[p.level] = idx
                idx += 1
        targets: dict[int, list[bytes]] = {}
        for level, at in (("system", first.get("system", first.get("messages"))), ("messages", first.get("messages"))):
            if at is not None and salts[level]:
                targets.setdefault(at, []).extend(salts[level])
        flat = array(_TYPECODE)
        ends: list[int] = []
        best: dict[int, float] = {}
        idx = 0
        for p in parts:
            for ids, ttl in zip(p.ids, p.ttls):
                start = len(flat)
                flat.extend(ids)
                if idx in targets:
                    flat[start] = flat[start] ^ _salt(b"|".join(targets[idx]))
                n = len(flat)
                if n and (not ends or ends[-1] != n):
                    ends.append(n)
                if ttl is not None and n:
                    best[n] = max(best.get(n, 0.0), ttl)
                idx += 1
        top = obj.get("cache_control")
        if isinstance(top, dict) and len(flat):
            best[len(flat)] = max(best.get(len(flat), 0.0), ttl_seconds(top))
        bps = tuple(sorted(best))
        return SimRequest(flat, time, bps, tuple(best[b] for b in bps), tuple(ends), (), "", label)


def _ttl(cc: Any) -> float | None:
    return ttl_seconds(cc) if isinstance(cc, dict) else None
