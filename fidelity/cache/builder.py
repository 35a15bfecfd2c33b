"""The one builder of the cache simulator's input: a request body's
:class:`~fidelity.cache.simulator.SimRequest`, for every command. A dialect
with an element handler (:mod:`.element_ids`) at its own provider's cache is
built element by element, reusing an earlier request's ids and prompt where
its elements are the same; any other from its whole cache view
(:func:`.whole_view.whole_request`). Each request has exactly one way; how
and why: docs/builder.md.
"""

from __future__ import annotations

import hashlib
from collections.abc import Hashable, Sequence
from operator import attrgetter
from typing import Any, NamedTuple

from ..errors import InputError
from ..tokens.billed import prompt_tokenizer
from ..wire.spans import known_members
from .element_ids import SKIP, Handler, Previous, handler_for, result_ids
from .items import FastView, Item, build_view, common_prefix, dumps_value, shared_values
from .memo import TokenMemo
from .simulator import SimRequest
from .whole_view import view_of, whole_request

__all__ = ["PromptIds", "Built", "KEEP", "element_handler"]

#: requests kept per builder to build the next ones from (sessions interleave)
KEEP = 8

_value = attrgetter("value")


def _digest(data: bytes) -> bytes:
    """16 bytes that stand for an element's bytes when requests are compared."""
    return hashlib.blake2b(data, digest_size=16).digest()


def _element_bytes(rec: Any, items: Sequence[Item]) -> list[bytes]:
    """``dumps_value`` of each item's value: sliced from the body as sent
    where that is the same bytes (a compact body whose layout
    :mod:`fidelity.wire.spans` knows), else serialised."""
    raw: bytes | None = getattr(rec, "raw_body", None)
    layout = known_members(raw) if raw is not None and isinstance(rec.body, dict) else None
    if raw is None or layout is None:
        return [dumps_value(it.value) for it in items]
    out: list[bytes] = []
    for it in items:
        where = it.where
        entry = layout.get(where[0]) if len(where) == 2 and type(where[1]) is int else None
        spans = entry[1] if entry is not None else None
        if spans is not None and where[1] < len(spans):
            array = rec.body.get(where[0])
            if type(array) is list and where[1] < len(array) and array[where[1]] is it.value:
                start, end = spans[where[1]]
                out.append(raw[start:end])
                continue
        out.append(dumps_value(it.value))
    return out


class Built(NamedTuple):
    """A built request: its cache model's name, the simulator's request,
    and (Anthropic) where the tools, system and messages levels start."""

    cache_model: str
    request: SimRequest
    levels: tuple[int, int, int] | None = None
    #: each cache-view segment's billed ids, the params segment first
    #: (Anthropic's markers removed; segments the cache leaves out, none)
    ids: tuple[Any, ...] = ()


def element_handler(d: Any, provider: str) -> Handler | None:
    """The element handler that builds ``d``'s bodies at ``provider``'s
    cache, or ``None``: built from the whole view. The one choice of way."""
    return handler_for(d) if provider == d.provider else None


class PromptIds:
    """Builds each request's :class:`SimRequest` (a scan keeps one per
    partition, ``cache_prompt`` one per process)."""

    def __init__(self, memo: TokenMemo, digests: bool = False) -> None:
        self.memo = memo
        #: key the memo on 16-byte digests of the elements' bytes, not the
        #: bytes (a process-wide builder then holds ids, not copies of bodies)
        self.digests = digests
        # the latest requests built element by element, oldest first:
        # (dialect, model, what it left: its elements included); the last one is the
        # partition's previous request while ``_last`` holds
        self._states: list[tuple[str, str, Previous]] = []
        self._last = False

    def build(self, rec: Any, view: FastView | None, shared: int | None, time: float | None, label: Hashable,
              endpoint: str | None = None, output: Sequence[int] = ()) -> Built:
        """The :class:`Built` request of ``rec`` (its ``dialect``,
        ``provider``, ``model``, parsed ``body`` and ``raw_body`` or ``None``)
        sent to ``endpoint`` (``None``: the provider's own API). ``view``: its
        item view (``None``: built here); ``shared``: how many leading items
        equal the previous request's (``None``: compared here); ``output``:
        the reply's ids where known."""
        d = rec.dialect
        handler = element_handler(d, rec.provider)
        if handler is None:
            self._last = False
            body = rec.raw_body if rec.raw_body is not None else dumps_value(rec.body)
            tok = prompt_tokenizer(rec.model, rec.provider, d.name)
            return Built(*whole_request(d, body, tok, rec.model, rec.provider, endpoint, time, label, output))
        try:
            if view is None:
                view, shared = build_view(d, rec.body), None
            req, state, ids = self._elements(handler, rec, view, shared, time, label, endpoint, output)
        except (TypeError, ValueError, AttributeError, KeyError, IndexError) as exc:
            self._last = False
            # the dialect's cache view names what is wrong with the body
            body = rec.raw_body if rec.raw_body is not None else dumps_value(rec.body)
            view_of(d, body, endpoint)
            raise InputError(f"a {d.name} body fidelity cannot read: {exc}") from None
        return Built(handler.cache_model, req, handler.levels(state), ids)

    def _elements(self, h: Handler, rec: Any, view: FastView, shared: int | None, time: float | None,
                  label: Hashable, endpoint: str | None, output: Sequence[int]) -> tuple[SimRequest, Any, tuple[Any, ...]]:
        model = rec.model
        items = view.items
        # a body read from bytes shares no parsed objects with earlier ones:
        # digests of its elements' bytes find the earlier request (a compare in C);
        # the bytes serve the new elements below (each serialised once)
        blobs = _element_bytes(rec, items) if shared is None else None
        datas = [_digest(b) for b in blobs] if blobs is not None else None
        prev = self._parent(h.name, model, items, shared, datas)
        self._last = False  # until this request is built
        prep = h.prepare(rec.body, view, model, prev, endpoint)
        ctxs = h.contexts(prep, items, prev)
        results: list[Any] = []
        if prev is not None:
            k = min(prev.k, len(prev.results))
            results = prev.results[: common_prefix(ctxs[:k], prev.ctxs[:k])]
        same = len(results)
        memo, name = self.memo, h.name
        # past the shared run, an element that is the very object at the same
        # place of the parent, with the same context, has the parent's result
        # (a history re-sent after a changed first message: no serialisation)
        p_items = prev.items if prev is not None else ()
        n_same = min(len(p_items), len(prev.ctxs), len(prev.results)) if prev is not None else 0
        for i in range(same, len(items)):
            ctx = ctxs[i]
            if ctx is SKIP:
                results.append(None)
                continue
            it = items[i]
            if i < n_same and p_items[i].value is it.value and p_items[i].kind == it.kind \
                    and prev.ctxs[i] == ctx and prev.results[i] is not None:  # type: ignore[union-attr]
                results.append(prev.results[i])  # type: ignore[union-attr]
                continue
            data = blobs[i] if blobs is not None else dumps_value(it.value)
            mb = h.memo_bytes(data)
            if self.digests:
                mb = datas[i] if mb is data and datas is not None else _digest(mb)
            got = memo.get((name, model, it.kind, mb, ctx))
            if got is None:
                got = h.element(prep, it, data, ctx)
                # the key holds bytes of their own size (dumps_value's, strip_markers' and digests are)
                memo.put((name, model, it.kind, mb, ctx), got,
                         len(mb) + 8 * len(result_ids(got)) + 128, len(data))
            results.append(h.finish(it, got))
        pkey = (name, model, "params", view.params)
        params_ids = memo.get(pkey)
        if params_ids is None:
            params_ids = h.params_ids(prep)
            memo.put(pkey, params_ids, len(view.params) + 8 * len(params_ids) + 128)
        req, state = h.assemble(prep, rec.body, params_ids, items, results, prev, same, time, label, output)
        states = self._states
        if prev is not None and prev.k >= prev.n - 1:  # this request continues it: its session's latest turn now
            states[:] = [st for st in states if st[2] is not prev]
        # a body read from bytes keeps its elements' digests, not its parsed values (no later body shares them)
        kept = items if datas is None else ()
        states.append((name, model, Previous(0, len(items), prep, ctxs, results, state, kept, datas)))
        if len(states) > KEEP:
            del states[0]
        self._last = True
        return req, state, (params_ids, *(result_ids(r) for r in results if r is not None))

    def _parent(self, name: str, model: str, items: tuple[Item, ...], shared: int | None,
                datas: list[bytes] | None) -> Previous | None:
        """The kept request whose leading elements this one shares most: the
        partition's previous request shares ``shared``; an earlier one is
        compared in full only when it agrees on the element after those.
        ``datas``: the digests of the elements' bytes, where made."""
        best: Previous | None = None
        best_k = 0
        n = len(items)
        for i in range(len(self._states) - 1, -1, -1):
            s_name, s_model, st = self._states[i]
            s_items = st.items
            if s_name != name or s_model != model:
                continue
            if i == len(self._states) - 1 and self._last and shared is not None:
                k = min(shared, st.n)
            else:
                at = best_k if best is not None else 0
                if datas is not None and st.datas is not None:
                    if at >= min(n, st.n) or datas[at] != st.datas[at]:
                        continue
                    k = common_prefix(datas, st.datas)
                else:
                    if at >= min(n, len(s_items)) or items[at].value != s_items[at].value:
                        continue
                    k = shared_values(items, s_items, _value)
            if best is None or k > best_k:
                best, best_k = st, k
        if best is not None:
            best.k = best_k
        return best
