"""Score session × variant × provider: what a fork child inherits, reuses,
loses, and what that costs. Pure: the same fixtures, variants and price table
give the same :class:`Score`. Every pair goes through
:func:`fidelity.diff.compare_requests`; reads come from the cache simulator
run over the parent's whole request sequence. The columns are defined in
docs/report.md, "What each column means".
"""

from __future__ import annotations

import gc
import multiprocessing
import os
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from functools import lru_cache
from typing import Any

from . import breakpoints, pricing, tokens, wire
from . import diff as differ
from .cache.prompts import cache_prompt
from .cache.simulator import Prediction, Simulator
from .cache.whole_view import view_of
from .compose import Variant, parent_request, parent_requests
from .diff import DiffResult
from .diff.views import segment_name
from .errors import FidelityError, UnknownName
from .fixtures import FixtureSet, ProviderSetup, Session
from .model import RenderKey, Request, Route
from .tokens.billed import billing_tokenizer

__all__ = ["Cost", "SiblingFigures", "Row", "Skipped", "Score", "score", "HEAD_KINDS", "available_cores"]

HEAD_KINDS = ("params", "tools", "system")
#: seconds between two requests of the replayed parent sequence (well inside every lifetime)
_STEP = 30.0
#: coarse regions of the cache view, in the order the bars draw them
REGIONS = ("params", "tools", "system", "history")


@dataclass(frozen=True)
class Cost:
    """Prompt-side cost of one child request, USD, from one price row."""

    per_child: float
    per_1000: float
    cold_per_child: float
    savings_vs_spawn_per_child: float | None
    savings_vs_spawn_per_1000: float | None
    price_model: str
    source: str
    as_of: str


@dataclass(frozen=True)
class SiblingFigures:
    """One sibling of a fan-out against the first sibling."""

    index: int
    reused: int
    child_prompt: int
    first_divergent_byte: int | None
    segment: tuple[str, int] | None
    cause: str


@dataclass(frozen=True)
class Row:
    session: str
    variant: str
    dialect: str
    provider: str
    model: str
    tokenizer: str
    estimated: bool
    cache_model: str
    parent_prompt: int
    child_prompt: int
    inherited: int
    inheritable: int
    reused: int
    lost: int
    written: int
    #: tokens shared with the parent's prompt before the first divergence
    common_prefix: int
    first_divergent_byte: int | None
    raw_first_divergent_byte: int | None
    segment: tuple[str, int] | None
    #: the segment's name (:func:`fidelity.diff.views.segment_name`, the one namer)
    segment_name: str | None
    pointer: str | None
    cause: str
    cause_detail: str | None
    #: token counts of the child's cache view per region (params, tools, system, history)
    regions: tuple[tuple[str, int], ...]
    cost: Cost | None
    note: str | None
    expected: str
    meets_expectation: bool
    cache_preserving: bool
    siblings: tuple[SiblingFigures, ...] = ()
    #: every break of the child in cache order with what fixing it keeps
    #: (:func:`fidelity.diff.breaks_of` on the rendered pair)
    breaks: tuple[differ.Break, ...] = ()

    @property
    def region(self) -> str | None:
        """Where the divergence sits: params, tools, system or history."""
        if self.segment is None:
            return None
        return "history" if self.segment[0] == "message" else self.segment[0]


@dataclass(frozen=True)
class Skipped:
    """A combination that could not be scored, and why (for example a
    builder whose child the dialect cannot render)."""

    session: str
    variant: str
    dialect: str
    reason: str


@dataclass(frozen=True)
class Score:
    """The result object every report view renders."""

    fixtures: str
    price_table: str
    price_as_of: str
    sessions: tuple[Session, ...]
    variants: tuple[Variant, ...]
    providers: tuple[ProviderSetup, ...]
    rows: tuple[Row, ...]
    skipped: tuple[Skipped, ...] = ()
    #: real-harness forks (:class:`fidelity.proxy.harness_rows.HarnessRow`),
    #: shown next to the reference variants; empty when none were loaded
    harness: tuple[Any, ...] = ()

    def row(self, session: str, variant: str, dialect: str) -> Row:
        for r in self.rows:
            if (r.session, r.variant, r.dialect) == (session, variant, dialect):
                return r
        raise KeyError((session, variant, dialect))


@lru_cache(maxsize=512)
def _views(dialect: str, model: str, body: bytes) -> tuple[Any, ...]:
    """A body's cache view: (kind and token count, token ids, segment) per segment, memoised."""
    segs = view_of(wire.get(dialect), body)
    ids = cache_prompt(body, dialect=dialect, model=model).segment_ids
    return tuple((seg.kind, len(i)) for seg, i in zip(segs, ids)), tuple(ids), tuple(segs)


def _layout(body: bytes, dialect: str, model: str) -> tuple[tuple[str, int], ...]:
    """Tokens of a body's cache view per region, in region order."""
    kinds = _views(dialect, model, body)[0]
    totals = dict.fromkeys(REGIONS, 0)
    for kind, count in kinds:
        totals["history" if kind == "message" else kind] += count
    return tuple(totals.items())


def _common_tokens(dialect: str, model: str, a: bytes, b: bytes) -> int:
    """Tokens shared at the start of two bodies' cache views."""
    _, ia, sa = _views(dialect, model, a)
    _, ib, sb = _views(dialect, model, b)
    return differ.shared_tokens(sa, ia, sb, ib)


def _inherited_messages(base: Request, history: Request) -> int:
    n = 0
    for a, b in zip(base.messages, history.messages):
        if a != b:
            break
        n += 1
    return n


def _cost(prices: pricing.PriceTable, result: DiffResult, provider: str,
          cached: int | None = None) -> tuple[Cost | None, str | None]:
    """Prompt-side cost of one child request through :func:`fidelity.pricing.prompt_cost`
    (peak rates where prices depend on the time of day); ``None`` and a note
    when the price is unknown (never 0)."""
    try:
        price = prices.lookup(provider, result.model)
    except UnknownName:  # self-hosted engines have no list price
        return None, f"no list price for {provider}/{result.model} in {prices.name}"
    if cached is None:
        cached = result.cache.predicted_cached
    prompt = result.tokens.child_prompt
    usd = pricing.prompt_cost(price, cached=cached, written=result.cache.written, uncached=max(0, prompt - cached))
    cold = pricing.prompt_cost(price, cached=0, written=0, uncached=prompt)
    if usd is None or cold is None:
        return None, f"cost unknown: {prices.name} gives {price.model} no cache-read price"
    return Cost(usd, usd * 1000, cold, None, None, price.model, price.source, price.as_of), None


def _meets(variant: Variant, inherited: int, reused: int, lost: int, result: DiffResult,
           inheritable: int | None = None) -> bool:
    seg = result.view.segment
    if variant.expect == "placement":
        if not breakpoints.affects(result.provider):
            return lost == 0
        if result.provider == "anthropic":  # caches only where asked: no placement beats Claude Code's
            return inheritable is not None and reused <= inheritable
        return True  # DashScope: without markers its implicit cache reads the prefix by itself
    if variant.expect == "keeps-prefix":
        return lost == 0
    if variant.expect == "loses-after-head" and inherited == 0 and lost == 0:
        return True  # no inherited message, and the cached head ends before the change
    if variant.expect in ("loses-history", "loses-after-head"):
        return lost > 0 and seg is not None and seg[0] in HEAD_KINDS
    if variant.expect == "loses-all":
        return reused == 0
    if variant.expect == "no-inheritance":
        return inherited == 0
    if variant.expect == "defect":  # or invisible: the provider never sees the defect's tokens
        return lost == 0 or result.cause.kind == variant.cause
    return False


class _Scorer:
    def __init__(self, prices: pricing.PriceTable, variants: Sequence[Variant]) -> None:
        self.prices = prices
        self.by_name = {v.name: v for v in variants}

        self._memo: dict[tuple[str, str, bytes, bytes], DiffResult] = {}
        self._breaks: dict[tuple[str, str, bytes, bytes], tuple[differ.Break, ...]] = {}
        self._states: dict[tuple[str, str, str, str], tuple[Simulator, float, Route]] = {}
        self._predictions: dict[tuple[int, Route, bytes], Prediction] = {}
        self._parents: dict[tuple[str, str, str, str], tuple[Request, Request]] = {}
        #: (id(request), dialect) -> (request, body): a request is rendered once (it is held, so its id stays its own)
        self._bodies: dict[tuple[int, str], tuple[Request, bytes]] = {}
        #: (dialect, request written alike) -> body: variants build many requests equal to others' (a
        #: reference variant's child again as another row's faithful child), each rendered once
        self._alike: dict[tuple[str, RenderKey], bytes] = {}

    def render(self, request: Request, dialect: str) -> bytes:
        """``wire.get(dialect).render(request)``, once per request (an object,
        or one written alike, :func:`fidelity.model.written_alike`) and dialect."""
        key = (id(request), dialect)
        hit = self._bodies.get(key)
        if hit is None or hit[0] is not request:
            if len(self._bodies) >= 4096:
                self._bodies.clear()
                self._alike.clear()
            alike = (dialect, RenderKey(request))
            body = self._alike.get(alike)
            if body is None:
                body = self._alike[alike] = wire.get(dialect).render(request)
            hit = self._bodies[key] = (request, body)
        return hit[1]

    def parent(self, session: Session, setup: ProviderSetup, placement: str) -> tuple[Request, Request]:
        """The session's history on the setup's route and the parent's last
        request under ``placement`` (one object per combination, so that
        their renders are shared by every variant)."""
        d = wire.get(setup.dialect)
        key = (session.name, setup.dialect, setup.model, placement)
        hit = self._parents.get(key)
        if hit is None:
            history = replace(session.history, route=Route(d.provider, setup.model))
            hit = self._parents[key] = (history, breakpoints.place(parent_request(history), placement, d.provider))
        return hit

    def _state(self, session: Session, setup: ProviderSetup, placement: str) -> tuple[Simulator, float, Route]:
        """The simulator after the parent's whole request sequence under
        ``placement``, the time for the child, the parent's route (memoised)."""
        d = wire.get(setup.dialect)
        key = (session.name, setup.dialect, setup.model, placement if breakpoints.affects(d.provider) else "-")
        hit = self._states.get(key)
        if hit is None:
            history = replace(session.history, route=Route(d.provider, setup.model))
            sim: Simulator | None = None
            k = -1
            for k, req in enumerate(parent_requests(history)):
                body = self.render(breakpoints.place(req, placement, d.provider), d.name)
                cp = cache_prompt(body, dialect=d.name, model=setup.model, time=k * _STEP, label=f"parent#{k}")
                if sim is None:
                    sim = Simulator(cp.cache_model, cp.model)
                sim.feed(cp.request)
            if sim is None:
                raise FidelityError(f"session {session.name!r} has no parent request")
            hit = self._states[key] = (sim, (k + 1) * _STEP, history.route)
        return hit

    def predict(self, session: Session, setup: ProviderSetup, placement: str, child: Request) -> Prediction:
        """What ``child`` (already placed) reads and writes after the parent's sequence."""
        sim, now, route = self._state(session, setup, placement)
        d = wire.get(setup.dialect)
        body = self.render(child, d.name)
        key = (id(sim), child.route, body)
        hit = self._predictions.get(key)
        if hit is None:
            cp = cache_prompt(body, dialect=d.name, model=child.route.model, time=now, label="child")
            if child.route != route:  # another model: another cache, nothing of the parent's
                hit = Simulator(cp.cache_model, cp.model).predict(cp.request)
            else:
                hit = sim.predict(cp.request)
            self._predictions[key] = hit
        return hit

    def compare(self, parent: Request, child: Request, dialect: str) -> DiffResult:
        """:func:`fidelity.diff.compare_requests`, memoised on the rendered
        pair (many variants share their faithful reference child)."""
        key = (dialect, child.route.model, self.render(parent, dialect), self.render(child, dialect))
        hit = self._memo.get(key)
        if hit is None:
            hit = self._memo[key] = differ.compare_requests(parent, child, dialect, prices=self.prices,
                                                            bodies=(key[2], key[3]))
        return hit

    def breaks(self, parent: Request, child: Request, dialect: str, result: DiffResult) -> tuple[differ.Break, ...]:
        """:func:`fidelity.diff.breaks_of` on the rendered pair, memoised like :meth:`compare`."""
        p_body, c_body = self.render(parent, dialect), self.render(child, dialect)
        key = (dialect, child.route.model, p_body, c_body)
        hit = self._breaks.get(key)
        if hit is None:
            hit = self._breaks[key] = tuple(differ.breaks_of(p_body, c_body, dialect=dialect, model=child.route.model,
                                                             prices=self.prices, result=result))
        return hit

    def row(self, session: Session, variant: Variant, setup: ProviderSetup) -> Row:
        d = wire.get(setup.dialect)
        placement = variant.breakpoints or breakpoints.DEFAULT
        history, parent = self.parent(session, setup, placement)
        context = {"alt_model": setup.alt_model, "model": setup.model}
        directives = variant.directives(session)
        children = tuple(breakpoints.place(c, placement, d.provider)
                         for c in variant.children(history, directives, context))
        child = children[0]
        result = self.compare(parent, child, setup.dialect)
        fixes = self.breaks(parent, child, setup.dialect, result)

        base = variant.base(history, directives[0])
        n = _inherited_messages(base, history)
        inherited = 0
        if n and variant.builder != "spawn":
            head = replace(child, messages=child.messages[:n])
            inherited = _common_tokens(setup.dialect, result.model, self.render(head, d.name),
                                       self.render(child, d.name))
        pred = self.predict(session, setup, placement, child)
        if variant.expect == "no-inheritance":
            inheritable = 0
        else:
            ref = self.by_name.get(variant.baseline) if variant.baseline else None
            ref_placement = (ref.breakpoints if ref else variant.breakpoints) or breakpoints.DEFAULT
            faithful = ref.apply(history, directives[0], context) if ref else base
            faithful = breakpoints.place(faithful, ref_placement, d.provider)
            inheritable = self.predict(session, setup, ref_placement, faithful).cache_read or 0
        reused = pred.cache_read or 0
        lost = max(0, inheritable - reused)
        # the simulator's figures replace the differ's one-parent prediction
        result = replace(result, cache=replace(result.cache, predicted_cached=reused,
                                               written=pred.cache_write or 0, lost=lost))

        cost, note = _cost(self.prices, result, d.provider, reused)
        siblings: list[SiblingFigures] = []
        total = cost.per_child if cost else 0.0
        for k, sib in enumerate(children[1:], start=2):
            r = self.compare(children[0], sib, setup.dialect)
            siblings.append(SiblingFigures(k, r.cache.predicted_cached, r.tokens.child_prompt,
                                           r.view.first_divergent_byte, r.view.segment, r.cause.kind))
            c, _ = _cost(self.prices, r, d.provider)
            total += c.per_child if c else 0.0
        if siblings and cost is not None:
            mean = total / len(children)
            cost = replace(cost, per_child=mean, per_1000=mean * 1000)
        return Row(
            session=session.name, variant=variant.name, dialect=setup.dialect, provider=d.provider,
            model=result.model, tokenizer=result.tokens.tokenizer, estimated=result.tokens.estimated,
            cache_model=result.cache.model, parent_prompt=result.tokens.parent_prompt,
            child_prompt=result.tokens.child_prompt, inherited=inherited, inheritable=inheritable,
            reused=reused, lost=lost, written=result.cache.written, common_prefix=result.tokens.common_prefix,
            first_divergent_byte=result.view.first_divergent_byte,
            raw_first_divergent_byte=result.raw.first_divergent_byte, segment=result.view.segment,
            segment_name=segment_name(result), pointer=result.view.pointer, cause=result.cause.kind, cause_detail=result.cause.detail,
            regions=_layout(self.render(child, d.name), setup.dialect, result.model), cost=cost, note=note,
            expected=variant.expect, meets_expectation=_meets(variant, inherited, reused, lost, result, inheritable),
            cache_preserving=variant.cache_preserving, siblings=tuple(siblings), breaks=fixes,
        )


def _with_spawn_savings(rows: list[Row]) -> list[Row]:
    spawn = {(r.session, r.dialect): r.cost for r in rows if r.expected == "no-inheritance" and r.cost}
    out = []
    for r in rows:
        base = spawn.get((r.session, r.dialect))
        if r.cost is not None and base is not None:
            saved = base.per_child - r.cost.per_child
            r = replace(r, cost=replace(r.cost, savings_vs_spawn_per_child=saved,
                                        savings_vs_spawn_per_1000=saved * 1000))
        out.append(r)
    return out


def score(
    fixtures: FixtureSet,
    variants: Sequence[Variant],
    *,
    providers: Sequence[str] | None = None,
    prices: pricing.PriceTable | None = None,
    progress: Callable[[str], None] | None = None,
    jobs: int | None = 1,
) -> Score:
    """Score every session × variant × provider (the fixture table's registered
    dialects, optionally narrowed to ``providers``); ``progress`` gets each row's
    label. ``jobs``: processes (``None``: one per core); the result is the same for any."""
    table = prices if prices is not None else pricing.load()
    setups = _setups(fixtures, providers)
    units = [(i, k) for i in range(len(fixtures.sessions)) for k in range(len(setups))]
    work = (tuple(fixtures.sessions), tuple(variants), tuple(setups), table)
    done: dict[tuple[int, int], list[Row | Skipped]] = {}

    def record(found_units: list[tuple[tuple[int, int], list[Row | Skipped]]]) -> None:
        for unit, found in found_units:
            done[unit] = found
            if progress is not None:
                session, setup = fixtures.sessions[unit[0]], setups[unit[1]]
                for variant in variants:
                    progress(f"{session.name} / {variant.name} / {setup.dialect}")

    jobs = min(len(units), available_cores() if jobs is None else max(1, jobs))
    if jobs <= 1:
        _start_worker(*work)
        try:
            for unit in units:
                record([_score_unit(unit)])
        finally:
            _WORK.clear()
            gc.set_threshold(*_GC_DEFAULT)
    else:
        # rows are pure functions of their inputs: which process scored a task does not matter
        tasks = _tasks(len(fixtures.sessions), _vocabularies(setups), jobs)
        context = multiprocessing.get_context("fork" if "fork" in multiprocessing.get_all_start_methods() else None)
        with context.Pool(min(jobs, len(tasks)), initializer=_start_worker, initargs=work) as pool:
            for found_units in pool.imap_unordered(_score_units, tasks):
                record(found_units)
    items = [done[(i, k)][v] for i in range(len(fixtures.sessions))  # the serial order: session, variant, provider
             for v in range(len(variants)) for k in range(len(setups))]
    rows = [item for item in items if isinstance(item, Row)]
    skipped = [item for item in items if isinstance(item, Skipped)]
    return Score(fixtures.source, table.name, table.as_of, tuple(fixtures.sessions), tuple(variants),
                 tuple(setups), tuple(_with_spawn_savings(rows)), tuple(skipped))


def _vocabularies(setups: Sequence[ProviderSetup]) -> list[list[int]]:
    """The indexes of ``setups`` grouped by the vocabulary that encodes their
    texts; each tokenizer is loaded here, once, to be shared with forked workers."""
    vocab: dict[str, list[int]] = {}
    for k, setup in enumerate(setups):
        tok = tokens.for_model(setup.model, wire.get(setup.dialect).provider)
        tok.ids("a")
        billed = billing_tokenizer(tok, setup.model)
        billed.ids("a")
        vocab.setdefault(getattr(billed, "base_name", billed.name), []).append(k)
    return list(vocab.values())


def _tasks(n_sessions: int, groups: list[list[int]], jobs: int) -> list[list[tuple[int, int]]]:
    """The units ``(session, provider)`` of each task, largest first: one task
    per vocabulary group (a shared text is encoded in one process only), the
    largest halved by sessions while there are fewer tasks than ``jobs``."""
    tasks = [[(i, k) for i in range(n_sessions) for k in ks] for ks in groups]
    while len(tasks) < jobs:
        split = [t for t in tasks if len({i for i, _ in t}) > 1]
        if not split:
            break
        big = max(split, key=len)
        sessions = sorted({i for i, _ in big})
        first = set(sessions[: len(sessions) // 2])
        tasks.remove(big)
        tasks += [[u for u in big if u[0] in first], [u for u in big if u[0] not in first]]
    return sorted(tasks, key=len, reverse=True)


def available_cores() -> int:
    """Cores this process may run on (the ``--jobs`` default)."""
    try:
        return len(os.sched_getaffinity(0))
    except AttributeError:  # not on Linux
        return os.cpu_count() or 1


#: what a worker scores: sessions, variants, provider setups, prices, and its scorer
_WORK: list[Any] = []


def _start_worker(sessions: tuple[Session, ...], variants: tuple[Variant, ...],
                  setups: tuple[ProviderSetup, ...], table: pricing.PriceTable) -> None:
    _WORK[:] = [sessions, variants, setups, _Scorer(table, variants)]
    _GC_DEFAULT[:] = gc.get_threshold()
    if _GC_DEFAULT[0]:  # 0: the caller turned automatic collection off
        # rarer cyclic-collector passes over large acyclic memos (as fidelity.scan.partition.GC_THRESHOLDS)
        gc.set_threshold(*(max(a, b) for a, b in zip(_GC_DEFAULT, (50_000, 20, 100))))


#: the collector's thresholds before scoring, restored after a serial score
_GC_DEFAULT: list[int] = [700, 10, 10]


def _score_units(units: list[tuple[int, int]]) -> list[tuple[tuple[int, int], list[Row | Skipped]]]:
    return [_score_unit(unit) for unit in units]


def _score_unit(unit: tuple[int, int]) -> tuple[tuple[int, int], list[Row | Skipped]]:
    """Every variant's row for one session on one provider, in variant order."""
    sessions, variants, setups, scorer = _WORK
    session, setup = sessions[unit[0]], setups[unit[1]]
    out: list[Row | Skipped] = []
    for variant in variants:
        try:
            out.append(scorer.row(session, variant, setup))
        except FidelityError as exc:
            out.append(Skipped(session.name, variant.name, setup.dialect, str(exc)))
    return unit, out


def _setups(fixtures: FixtureSet, providers: Sequence[str] | None) -> list[ProviderSetup]:
    """The fixture table's registered dialects, narrowed to ``providers`` (each must be one of them)."""
    known = set(wire.names())
    setups = [p for p in fixtures.providers if p.dialect in known]
    for name in providers or ():
        if name not in {p.dialect for p in setups}:
            raise UnknownName("provider", name, [p.dialect for p in setups])
    return [p for p in setups if not providers or p.dialect in providers]


def row_count(fixtures: FixtureSet, variants: Sequence[Variant], providers: Sequence[str] | None = None) -> int:
    """How many rows :func:`score` will produce (for a progress bar)."""
    return len(fixtures.sessions) * len(variants) * len(_setups(fixtures, providers))
