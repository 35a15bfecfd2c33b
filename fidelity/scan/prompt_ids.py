"""Each request's cache simulator input, the same
:class:`~fidelity.cache.simulator.SimRequest` that ``fidelity replay`` feeds
(:func:`fidelity.cache.prompts.cache_prompt` on the request's bytes), built
from work already done for earlier requests.

A session re-sends its history with every request, so ``cache_prompt`` on
each whole body pays for the whole history again (a parse, the cache view,
billed ids of every segment). :class:`PromptIds` builds the same request
element by element (:mod:`.billed_elements`) from the earlier request it
shares most with (among the last :data:`KEEP` it built; the scan keeps one
builder per session, so that is mostly the session's previous turn): an
element holding the same JSON as the one at the same place there, with the
same context, reuses that request's ids, its contexts where what they read
did not change, and its assembled prompt (the shared leading part is a slice
of it); any
other element is looked up in the worker's memo by its bytes and context
(:class:`~fidelity.scan.memo.TokenMemo`), and tokenized only when new. The
per-segment functions are ``cache_prompt``'s own and the request is
assembled by the same functions (``generic_assemble``, ``anthropic_assemble``),
so the result is equal, ids, breakpoints, lifetimes and block ends included
(``tests/scan/test_scan_fast_ids.py`` checks it on generated bodies, recorded
traffic and the ``--json`` output).

``cache_prompt`` itself builds a request when the fast path cannot be exact:
a dialect without a handler (Gemini, DashScope, vLLM, SGLang), a body held
as text that is not compact JSON as orjson writes it (whitespace is part of
some segments' bytes), or anything the handler refuses; :attr:`PromptIds.slow`
counts them. ``FIDELITY_SCAN_FAST=0`` sends every request through
``cache_prompt`` (the tests compare both).
"""

from __future__ import annotations

import os
from collections.abc import Hashable
from dataclasses import replace
from functools import lru_cache
from operator import attrgetter
from typing import Any

import orjson

from ..cache.prompts import cache_prompt
from ..cache.simulator import SimRequest
from ..providers import placed_url
from .billed_elements import SKIP, Handler, Previous, Unsupported, handler_for, result_ids
from .memo import TokenMemo
from .view import FastView, Item, shared_values, trimmed

_value = attrgetter("value")

__all__ = ["PromptIds", "fast_enabled", "KEEP"]

#: requests kept per partition to build the next ones from (sessions interleave in a partition)
KEEP = 8


def fast_enabled() -> bool:
    """False when ``FIDELITY_SCAN_FAST=0`` (every request through ``cache_prompt``)."""
    return os.environ.get("FIDELITY_SCAN_FAST", "1").strip() != "0"


class PromptIds:
    """Builds each request's :class:`SimRequest` for one partition, requests
    fed in the partition's order."""

    def __init__(self, memo: TokenMemo, fast: bool | None = None) -> None:
        self.memo = memo
        self.use_fast = fast_enabled() if fast is None else fast
        #: requests built by ``cache_prompt`` / element by element
        self.slow = 0
        self.fast = 0
        #: why requests went to ``cache_prompt`` (reason -> count)
        self.reasons: dict[str, int] = {}
        # the latest requests built element by element, oldest first:
        # (dialect, model, what it left: its elements included); the last one is the
        # partition's previous request while ``_last`` holds
        self._states: list[tuple[str, str, Previous]] = []
        self._last = False

    def build(self, rec: Any, view: FastView, shared: int, time: float | None,
              label: Hashable) -> tuple[str, SimRequest]:
        """The cache model name and the simulator request of ``rec``;
        ``view`` is its fast view and ``shared`` how many of its leading
        elements hold the same JSON as the previous request this builder
        built (:func:`~fidelity.scan.view.view_after`)."""
        reason = "disabled"
        if self.use_fast:
            # a body sent to another provider's endpoint (DeepSeek's /responses,
            # OpenRouter) is that provider's cache: cache_prompt routes it
            handler = handler_for(rec.dialect) if rec.provider == rec.dialect.provider else None
            reason = "dialect" if rec.provider == rec.dialect.provider else "endpoint"
            if handler is not None:
                try:
                    if rec.raw_body is not None and rec.raw_body != _dumps(rec.body):
                        raise Unsupported("body text")
                    if getattr(rec.dialect, "endpoint_aware", False) and _third_party(rec.url):
                        raise Unsupported("third-party endpoint")  # its cache view depends on the URL
                    got = self._fast(handler, rec, view, shared, time, label)
                    self.fast += 1
                    return handler.cache_model, got
                except Unsupported as exc:
                    reason = str(exc) or "unsupported"
                except Exception:  # noqa: BLE001 -- cache_prompt decides (it raises the right error)
                    reason = "error"
        self._last = False
        self.slow += 1
        self.reasons[reason] = self.reasons.get(reason, 0) + 1
        body = rec.raw_body if rec.raw_body is not None else orjson.dumps(rec.body)
        cp = cache_prompt(body, dialect=rec.dialect.name, model=rec.model, time=time, label=label,
                          endpoint=placed_url(rec.url), provider=rec.provider)
        return cp.cache_model, replace(cp.request, key="")

    def _fast(self, h: Handler, rec: Any, view: FastView, shared: int, time: float | None,
              label: Hashable) -> SimRequest:
        model = rec.model
        items = view.items
        prev = self._parent(h.name, model, items, shared)
        self._last = False  # until this request is built
        prep = h.prepare(rec.body, view, model, prev)
        ctxs = h.contexts(prep, items, prev)
        results: list[Any] = []
        if prev is not None:
            p_ctxs, p_res = prev.ctxs, prev.results
            k = min(prev.k, len(p_res))
            if ctxs[:k] == p_ctxs[:k]:
                results = p_res[:k]
            else:
                for i in range(k):
                    if ctxs[i] != p_ctxs[i]:
                        break
                    results.append(p_res[i])
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
            data = _dumps(it.value)
            mb = h.memo_bytes(data)
            got = memo.get((name, model, it.kind, mb, ctx))
            if got is None:
                got = h.element(prep, it, data, ctx)
                # the key the memo keeps holds a copy of its own size (orjson's is larger)
                memo.put((name, model, it.kind, trimmed(mb), ctx), got,
                         len(data) + 8 * len(result_ids(got)) + 128, len(data))
            results.append(h.finish(it, got))
        pkey = (name, model, "params", view.params)
        params_ids = memo.get(pkey)
        if params_ids is None:
            params_ids = h.params_ids(prep)
            memo.put(pkey, params_ids, len(view.params) + 8 * len(params_ids) + 128)
        req, state = h.assemble(prep, rec.body, params_ids, items, results, prev, same, time, label)
        states = self._states
        if prev is not None and prev.k >= prev.n - 1:  # this request continues it: its session's latest turn now
            states[:] = [st for st in states if st[2] is not prev]
        states.append((name, model, Previous(0, len(items), prep, ctxs, results, state, items)))
        if len(states) > KEEP:
            del states[0]
        self._last = True
        return req

    def _parent(self, name: str, model: str, items: tuple[Item, ...], shared: int) -> Previous | None:
        """The kept request whose leading elements this one shares most (a
        session's previous turn, though other sessions' requests came in
        between): the partition's previous request shares ``shared``; an
        earlier one is compared in full only when it agrees on the element
        after those (a compare in C)."""
        best: Previous | None = None
        best_k = 0
        n = len(items)
        for i in range(len(self._states) - 1, -1, -1):
            s_name, s_model, st = self._states[i]
            s_items = st.items
            if s_name != name or s_model != model:
                continue
            if i == len(self._states) - 1 and self._last:
                k = min(shared, st.n)
            else:
                at = best_k if best is not None else 0
                if at >= min(n, len(s_items)) or items[at].value != s_items[at].value:
                    continue
                k = shared_values(items, s_items, _value)
            if best is None or k > best_k:
                best, best_k = st, k
        if best is not None:
            best.k = best_k
        return best


def _dumps(value: Any) -> bytes:
    """Compact JSON as orjson writes it (what ``cache_prompt`` is given for
    a body logged as an object); a value orjson refuses is not for the fast path."""
    try:
        return orjson.dumps(value)
    except TypeError as exc:
        raise Unsupported(str(exc)) from None


@lru_cache(maxsize=4096)  # a log names few URLs
def _third_party(url: str | None) -> bool:
    """Does ``url`` place the request at a cache other than the dialect's
    own API (:func:`fidelity.providers.placed_url`)? Only such a request's
    cache view depends on its URL (Claude Code's billing block)."""
    from ..wire.anthropic_messages import billing_block_keyed

    placed = placed_url(url)
    return placed is not None and billing_block_keyed(placed)
