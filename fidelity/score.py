"""Score session × variant × provider: what a fork child inherits, reuses,
loses, and what that costs.

Every scored pair goes through :func:`fidelity.diff.compare_requests` (one
differ for the whole toolkit); this module only decides *which* pairs to
compare and turns their figures into the report's columns. It is pure: the
same fixtures, variants and price table give the same :class:`Score`.

Definitions (tokens of the child's prompt, under the provider's tokenizer and
cache model):

* **inherited**: the child's prompt up to the end of the history it copied
  from the parent (head plus inherited messages); 0 when it copied no message.
* **inheritable**: what a faithful child of the variant's baseline
  composition (under the baseline's breakpoint placement) reads from the
  cache the parent's request sequence left.
* **reused**: what the cache model predicts this child reads from cache.

Reads come from the cache simulator (:class:`fidelity.cache.simulator.Simulator`):
the parent's whole request sequence (:func:`fidelity.compose.parent_requests`,
one request per assistant turn, 30 s apart) is rendered in the dialect with
the harness's breakpoint placement (:mod:`fidelity.breakpoints`; the
variant's own, else Claude Code's) and run through it, then the child is
predicted against everything those requests wrote. The differ still names
the first divergence from the parent's last request and its cause.
* **lost**: ``max(0, inheritable - reused)``: prefix the composition threw
  away. A declared cache-preserving variant must lose 0.
* **cost**: ``reused × cache_read + written × cache_write + rest × input``
  per child request (prompt side only: output is the same across variants),
  and ×1000 per 1,000 forks; savings against spawn = spawn's cost − this cost
  (negative: inherited context costs more than a bare directive, the price of
  the context the child starts with).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from typing import Any

from . import breakpoints, pricing, tokens, wire
from . import diff as differ
from .cache.prompts import cache_prompt
from .cache.simulator import Prediction, Simulator
from .compose import Variant, parent_request, parent_requests
from .diff import DiffResult
from .errors import FidelityError, UnknownName
from .fixtures import FixtureSet, ProviderSetup, Session
from .model import Request, Route

__all__ = ["Cost", "SiblingFigures", "Row", "Skipped", "Score", "score", "layout", "HEAD_KINDS"]

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


def _views(dialect: str, model: str, body: bytes) -> tuple[Any, ...]:
    """``(segment kind, token count)`` of a body's cache view; memoised per body."""
    key = (dialect, model, body)
    hit = _VIEW_MEMO.get(key)
    if hit is None:
        d = wire.get(dialect)
        segs = d.cache_view(body)
        ids = differ.prompt_token_ids(tokens.for_model(model, d.provider), segs,
                                      dialect=d.name, provider=d.provider, model=model)
        hit = _VIEW_MEMO[key] = (tuple((seg.kind, len(i)) for seg, i in zip(segs, ids)), tuple(ids), tuple(segs))
    return hit


#: (dialect, model, body) -> (kind and token count per segment, token ids per segment, segments)
_VIEW_MEMO: dict[tuple[str, str, bytes], tuple[Any, ...]] = {}


def layout(child: Request, dialect: str, model: str) -> tuple[tuple[str, int], ...]:
    """Tokens of ``child``'s cache view per region, in region order."""
    kinds = _views(dialect, model, wire.get(dialect).render(child))[0]
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
                body = d.render(breakpoints.place(req, placement, d.provider))
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
        body = d.render(child)
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
        d = wire.get(dialect)
        key = (dialect, child.route.model, d.render(parent), d.render(child))
        hit = self._memo.get(key)
        if hit is None:
            hit = self._memo[key] = differ.compare_requests(parent, child, dialect, prices=self.prices)
        return hit

    def breaks(self, parent: Request, child: Request, dialect: str, result: DiffResult) -> tuple[differ.Break, ...]:
        """:func:`fidelity.diff.breaks_of` on the rendered pair, memoised like :meth:`compare`."""
        d = wire.get(dialect)
        p_body, c_body = d.render(parent), d.render(child)
        key = (dialect, child.route.model, p_body, c_body)
        hit = self._breaks.get(key)
        if hit is None:
            hit = self._breaks[key] = tuple(differ.breaks_of(p_body, c_body, dialect=dialect, model=child.route.model,
                                                             prices=self.prices, result=result))
        return hit

    def row(self, session: Session, variant: Variant, setup: ProviderSetup) -> Row:
        d = wire.get(setup.dialect)
        history = replace(session.history, route=Route(d.provider, setup.model))
        placement = variant.breakpoints or breakpoints.DEFAULT
        parent = breakpoints.place(parent_request(history), placement, d.provider)
        context = {"alt_model": setup.alt_model, "model": setup.model}
        directives = session.siblings[: variant.fanout] if variant.fanout > 1 else (session.directive,)
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
            inherited = _common_tokens(setup.dialect, result.model, d.render(head), d.render(child))
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
        if len(children) > 1 and cost is not None:
            total = cost.per_child
            for k, sib in enumerate(children[1:], start=2):
                r = self.compare(children[0], sib, setup.dialect)
                siblings.append(SiblingFigures(k, r.cache.predicted_cached, r.tokens.child_prompt,
                                               r.view.first_divergent_byte, r.view.segment, r.cause.kind))
                c, _ = _cost(self.prices, r, d.provider)
                total += c.per_child if c else 0.0
            mean = total / len(children)
            cost = replace(cost, per_child=mean, per_1000=mean * 1000)
        elif len(children) > 1:
            for k, sib in enumerate(children[1:], start=2):
                r = self.compare(children[0], sib, setup.dialect)
                siblings.append(SiblingFigures(k, r.cache.predicted_cached, r.tokens.child_prompt,
                                               r.view.first_divergent_byte, r.view.segment, r.cause.kind))
        return Row(
            session=session.name, variant=variant.name, dialect=setup.dialect, provider=d.provider,
            model=result.model, tokenizer=result.tokens.tokenizer, estimated=result.tokens.estimated,
            cache_model=result.cache.model, parent_prompt=result.tokens.parent_prompt,
            child_prompt=result.tokens.child_prompt, inherited=inherited, inheritable=inheritable,
            reused=reused, lost=lost, written=result.cache.written, common_prefix=result.tokens.common_prefix,
            first_divergent_byte=result.view.first_divergent_byte,
            raw_first_divergent_byte=result.raw.first_divergent_byte, segment=result.view.segment,
            pointer=result.view.pointer, cause=result.cause.kind, cause_detail=result.cause.detail,
            regions=layout(child, setup.dialect, result.model), cost=cost, note=note,
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
) -> Score:
    """Score every session × variant × provider (providers: the fixture
    table's dialects that are registered, optionally narrowed to
    ``providers``). ``progress`` is called once per row with its label."""
    table = prices if prices is not None else pricing.load()
    known = set(wire.names())
    setups = [p for p in fixtures.providers if p.dialect in known]
    if providers:
        wanted = list(providers)
        for name in wanted:
            if name not in {p.dialect for p in setups}:
                raise UnknownName("provider", name, [p.dialect for p in setups])
        setups = [p for p in setups if p.dialect in wanted]
    scorer = _Scorer(table, variants)
    rows: list[Row] = []
    skipped: list[Skipped] = []
    for session in fixtures.sessions:
        for variant in variants:
            for setup in setups:
                try:
                    rows.append(scorer.row(session, variant, setup))
                except FidelityError as exc:
                    skipped.append(Skipped(session.name, variant.name, setup.dialect, str(exc)))
                if progress is not None:
                    progress(f"{session.name} / {variant.name} / {setup.dialect}")
    return Score(fixtures.source, table.name, table.as_of, tuple(fixtures.sessions), tuple(variants),
                 tuple(setups), tuple(_with_spawn_savings(rows)), tuple(skipped))


def row_count(fixtures: FixtureSet, variants: Sequence[Variant], providers: Sequence[str] | None = None) -> int:
    """How many rows :func:`score` will produce (for a progress bar)."""
    known = set(wire.names())
    setups = [p for p in fixtures.providers if p.dialect in known and (not providers or p.dialect in providers)]
    return len(fixtures.sessions) * len(variants) * len(setups)
