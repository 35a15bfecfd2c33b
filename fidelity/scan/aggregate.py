"""What a scan adds up, and the one result object every view renders.

Replay tasks return a :class:`Partial` (integer sums, lost dollars in
nano-dollars, and the worst example of each change) that merge by addition,
so executor, workers and order do not change the totals; :func:`build_result`
gives the ``fidelity.scan/1`` JSON (docs/scan.md)."""

from __future__ import annotations

import datetime as _dt
from dataclasses import dataclass, field
from typing import Any, TypeVar

from .. import pricing
from ..errors import UnknownName
from ..wire import Segment

__all__ = ["SCHEMA", "Break", "CrossPred", "CrossChild", "Partial", "Prices", "build_result"]

SCHEMA = "fidelity.scan/1"

PM = tuple[str, str]


@dataclass(frozen=True)
class Break:
    """A request whose prefix broke against the request it continues."""

    cause: str
    change: str
    detail: str
    where_kind: str
    pointer: str
    label: str
    provider: str
    model: str
    day: str
    lost: int
    time: float
    parent: tuple[str, int]
    child: tuple[str, int]
    parent_loc: tuple[int, int, int]
    child_loc: tuple[int, int, int]
    #: what the lost tokens cost, in nano-dollars (:func:`lost_nano`); ``None``: no price
    usd_nano: int | None = None
    #: the breaks behind the first, in cache order (:func:`fidelity.scan.fix_list.fix_list`):
    #: ``(cause, change, where kind, pointer pattern, label)`` each; they carry no loss
    behind: tuple[tuple[str, str, str, str, str], ...] = ()

    def rank(self) -> tuple[Any, ...]:
        return (-self.lost, self.time, self.child, self.parent)


@dataclass(frozen=True)
class CrossPred:
    """A request that a request of another partition continues (same session)."""

    prompt: int
    provider: str
    model: str
    params: bytes
    head: tuple[Segment, ...]
    where: tuple[str, int]
    loc: tuple[int, int, int]
    time: float
    #: when the last of its own cache entries runs out (:func:`fidelity.scan.partition.alive_until`)
    until: float


@dataclass(frozen=True)
class CrossChild:
    """A request whose session predecessor is in another partition: its head
    (params or first segment) changed."""

    loc: tuple[int, int, int]
    pred_loc: tuple[int, int]
    label: str
    line: int
    time: float
    day: str
    provider: str
    model: str
    prompt: int
    read: int
    params: bytes
    head: tuple[Segment, ...]


#: a row key of any length: ``(*key, provider, model)``
_Key = TypeVar("_Key", bound=tuple[str, ...])


def _add(d: dict[Any, list[int]], key: Any, values: list[int]) -> None:
    cur = d.get(key)
    if cur is None:
        d[key] = list(values)
    else:
        for i, v in enumerate(values):
            cur[i] += v


@dataclass
class Partial:
    """Mergeable sums of a scan (see the module docstring)."""

    # every row ends with the lost tokens' cost in nano-dollars (integers, so
    # that sums do not depend on the merge order) and the lost tokens no price covers
    #: (provider, model) -> requests, bytes, prompt, read, written, lost, breaks,
    #: usage requests, predicted read and prompt on them, reported read and prompt, nano, unpriced
    models: dict[PM, list[int]] = field(default_factory=dict)
    #: (day, provider, model) -> requests, prompt, read, lost, breaks, nano, unpriced
    days: dict[tuple[str, str, str], list[int]] = field(default_factory=dict)
    #: (cause, change, provider, model) -> first breaks, lost, nano, unpriced, breaks behind another
    causes: dict[tuple[str, str, str, str], list[int]] = field(default_factory=dict)
    #: (kind, pointer pattern, label, provider, model) -> first breaks, lost, nano, unpriced, behind
    wheres: dict[tuple[str, str, str, str, str], list[int]] = field(default_factory=dict)
    #: (cause, change, kind, pointer, label, provider, model) -> breaks, lost, nano, unpriced
    changes: dict[tuple[str, ...], list[int]] = field(default_factory=dict)
    examples: dict[tuple[str, ...], Break] = field(default_factory=dict)
    bad: dict[str, int] = field(default_factory=dict)
    bad_examples: list[tuple[str, int, str, str]] = field(default_factory=list)
    tokenizers: dict[PM, tuple[str, bool]] = field(default_factory=dict)
    partitions: int = 0
    evicted: int = 0
    tokenized_bytes: int = 0
    cross_preds: dict[tuple[int, int], CrossPred] = field(default_factory=dict)
    cross_children: list[CrossChild] = field(default_factory=list)
    #: (reason, provider, model) -> usage requests set apart (:mod:`fidelity.server_side`),
    #: predicted read and prompt on them, reported read and prompt
    apart: dict[tuple[str, str, str], list[int]] = field(default_factory=dict)
    #: (HTTP status, provider, model) -> failed requests (not simulated)
    failed: dict[tuple[int, str, str], int] = field(default_factory=dict)
    #: what the result's notes say besides prices (the driver's: partitions it could not split)
    notes: list[str] = field(default_factory=list)

    # -- adding ------------------------------------------------------------------
    def add_request(self, provider: str, model: str, day: str, prompt: int, read: int, written: int,
                    nbytes: int, usage: dict[str, Any] | None, apart: str | None = None) -> None:
        """One request; its logged ``usage`` is compared with the prediction
        unless ``apart`` says why its billed prompt holds what it does not."""
        u = [0, 0, 0, 0, 0]
        if usage and usage.get("prompt") is not None:
            u = [1, read, prompt, int(usage.get("cache_read") or 0), int(usage["prompt"])]
            if apart is not None:
                _add(self.apart, (apart, provider, model), u)
                u = [0, 0, 0, 0, 0]
        _add(self.models, (provider, model), [1, nbytes, prompt, read, written, 0, 0, *u, 0, 0])
        _add(self.days, (day, provider, model), [1, prompt, read, 0, 0, 0, 0])

    def add_break(self, b: Break) -> None:
        pm = (b.provider, b.model)
        cost = [b.usd_nano or 0, b.lost if b.usd_nano is None else 0]
        _add(self.models, pm, [0, 0, 0, 0, 0, b.lost, 1, 0, 0, 0, 0, 0, *cost])
        _add(self.days, (b.day, *pm), [0, 0, 0, b.lost, 1, *cost])
        _add(self.causes, (b.cause, b.change, *pm), [1, b.lost, *cost, 0])
        _add(self.wheres, (b.where_kind, b.pointer, b.label, *pm), [1, b.lost, *cost, 0])
        for cause, change, kind, pointer, label in b.behind:  # counted, not charged
            _add(self.causes, (cause, change, *pm), [0, 0, 0, 0, 1])
            _add(self.wheres, (kind, pointer, label, *pm), [0, 0, 0, 0, 1])
        ck = (b.cause, b.change, b.where_kind, b.pointer, b.label)
        _add(self.changes, (*ck, *pm), [1, b.lost, *cost])
        self._example(ck, b)

    def _example(self, ck: tuple[str, ...], b: Break) -> None:
        """Keep ``b`` as the example of change ``ck`` when it ranks first."""
        cur = self.examples.get(ck)
        if cur is None or b.rank() < cur.rank():
            self.examples[ck] = b

    def add_bad(self, label: str, line: int, reason: str, detail: str) -> None:
        self.bad[reason] = self.bad.get(reason, 0) + 1
        self.bad_examples.append((label, line, reason, detail))
        if len(self.bad_examples) > 200:
            self.bad_examples.sort()
            del self.bad_examples[100:]

    def add_failed(self, status: int, provider: str, model: str) -> None:
        key = (status, provider, model)
        self.failed[key] = self.failed.get(key, 0) + 1

    def note_tokenizer(self, provider: str, model: str, name: str, estimated: bool) -> None:
        self.tokenizers[(provider, model)] = (name, estimated)

    # -- merging -----------------------------------------------------------------
    def merge(self, other: Partial) -> Partial:
        for mine, theirs in ((self.models, other.models), (self.days, other.days), (self.causes, other.causes),
                             (self.wheres, other.wheres), (self.changes, other.changes), (self.apart, other.apart)):
            for k, v in theirs.items():
                _add(mine, k, v)
        for k, b in other.examples.items():
            self._example(k, b)
        for reason, n in other.bad.items():
            self.bad[reason] = self.bad.get(reason, 0) + n
        for key, n in other.failed.items():
            self.failed[key] = self.failed.get(key, 0) + n
        self.bad_examples.extend(other.bad_examples)
        self.bad_examples.sort()
        del self.bad_examples[100:]
        self.tokenizers.update(other.tokenizers)
        self.partitions += other.partitions
        self.evicted += other.evicted
        self.tokenized_bytes += other.tokenized_bytes
        self.cross_preds.update(other.cross_preds)
        self.cross_children.extend(other.cross_children)
        return self


# -- the result ---------------------------------------------------------------------


class Prices:
    """Price rows of one table per (provider, model), looked up once; the
    models without one are kept for the result's notes."""

    def __init__(self, table: pricing.PriceTable) -> None:
        self.table = table
        self.rows: dict[PM, pricing.Price | None] = {}
        self.notes: list[str] = []

    def price(self, pm: PM) -> pricing.Price | None:
        if pm not in self.rows:
            try:
                self.rows[pm] = self.table.lookup(pm[0], pm[1])
            except UnknownName:  # no price: tokens still count, dollars say null
                self.rows[pm] = None
                self.notes.append(pricing.no_price_note(self.table, pm[0], pm[1]))
        return self.rows[pm]

    def lost_nano(self, provider: str, model: str, lost: int, *, prompt: int, time: float | None) -> int | None:
        """What ``lost`` tokens of one request cost in nano-dollars
        (:func:`fidelity.pricing.lost_cost` at its time and prompt length);
        ``None`` without a price or a cache-read price."""
        at = _dt.datetime.fromtimestamp(time, _dt.UTC) if time else None
        usd = pricing.lost_cost(self.price((provider, model)), lost, prompt_tokens=prompt, at=at)
        return None if usd is None else round(usd * 1e9)


def _usd(lost: int, nano: int, unpriced: int) -> float | None:
    """A row's dollars: ``None`` when no lost token of it has a price."""
    if lost and unpriced >= lost:
        return None
    return round(nano / 1e9, 6)


def _group(d: dict[_Key, list[int]], n_key: int) -> dict[tuple[str, ...], list[int]]:
    """Sum rows keyed ``(*key, provider, model)`` over models."""
    out: dict[tuple[str, ...], list[int]] = {}
    for full, v in d.items():
        _add(out, full[:n_key], v)
    return out


def _rate(num: int, den: int) -> float | None:
    return round(num / den, 6) if den else None


def _reported(v: list[int], apart: dict[str, list[int]]) -> dict[str, Any] | None:
    """The predicted-vs-reported figures over the compared requests ``v``
    (requests, predicted read and prompt, reported read and prompt), and
    those set apart by reason; ``None`` where no usage was logged."""
    if not v[0] and not apart:
        return None
    return {"requests": v[0], "predicted_read": v[1], "predicted_prompt": v[2], "reported_read": v[3],
            "reported_prompt": v[4], "predicted_hit_rate": _rate(v[1], v[2]), "reported_hit_rate": _rate(v[3], v[4]),
            "set_apart": [{"reason": k, "requests": a[0], "predicted_read": a[1], "predicted_prompt": a[2],
                           "reported_read": a[3], "reported_prompt": a[4]} for k, a in sorted(apart.items())]}


def build_result(p: Partial, *, inputs: list[str], table: pricing.PriceTable, top: int = 20,
                 example_files: dict[tuple[str, ...], tuple[str, str]] | None = None) -> dict[str, Any]:
    """The ``fidelity.scan/1`` JSON document (deterministic: sorted, rounded)."""
    prices = Prices(table)
    models = []
    tot = [0] * 14
    for pm in sorted(p.models):
        v = p.models[pm]
        for i, x in enumerate(v):
            tot[i] += x
        tok = p.tokenizers.get(pm, ("", False))
        prices.price(pm)  # a model without a price gets its note
        models.append({
            "provider": pm[0], "model": pm[1], "tokenizer": tok[0], "estimated": tok[1],
            "requests": v[0], "bytes": v[1], "prompt_tokens": v[2], "read_tokens": v[3], "written_tokens": v[4],
            "lost_tokens": v[5], "lost_usd": _usd(v[5], v[12], v[13]),
            "breaks": v[6], "predicted_hit_rate": _rate(v[3], v[2]),
            "reported": _reported(v[7:12], {k[0]: a for k, a in p.apart.items() if k[1:] == pm}),
        })
    days = [{"day": day, "requests": v[0], "prompt_tokens": v[1], "read_tokens": v[2], "lost_tokens": v[3],
             "lost_usd": _usd(v[3], v[5], v[6]), "breaks": v[4]} for (day,), v in sorted(_group(p.days, 1).items())]
    causes = [{"cause": k[0], "change": k[1], "breaks": v[0], "first": v[0], "behind": v[4], "lost_tokens": v[1],
               "lost_usd": _usd(*v[1:4])} for k, v in _ranked(_group(p.causes, 2))]
    wheres = [{"kind": k[0], "pointer": k[1], "label": k[2], "breaks": v[0], "first": v[0], "behind": v[4],
               "lost_tokens": v[1], "lost_usd": _usd(*v[1:4])} for k, v in _ranked(_group(p.wheres, 3))]
    changes = []
    for rank, (k, v) in enumerate(_ranked(_group(p.changes, 5))[:top], start=1):
        ex = p.examples[k]
        entry: dict[str, Any] = {
            "rank": rank, "cause": k[0], "change": k[1], "kind": k[2], "pointer": k[3], "label": k[4],
            "breaks": v[0], "lost_tokens": v[1], "lost_usd": _usd(*v[1:4]),
            "example": {"detail": ex.detail, "provider": ex.provider, "model": ex.model, "lost_tokens": ex.lost,
                        "parent": f"{ex.parent[0]}:{ex.parent[1]}", "child": f"{ex.child[0]}:{ex.child[1]}"},
        }
        if example_files and k in example_files:
            entry["example"]["files"] = {"parent": example_files[k][0], "child": example_files[k][1]}
        changes.append(entry)
    reported = _reported(tot[7:12], {k: v for (k,), v in _group(p.apart, 1).items()})
    bad_total = sum(p.bad.values())
    by_status: dict[str, int] = {}
    failed_models: dict[tuple[str, str], int] = {}
    for (status, provider, model), n in sorted(p.failed.items()):
        by_status[str(status)] = by_status.get(str(status), 0) + n
        failed_models[(provider, model)] = failed_models.get((provider, model), 0) + n
    return {
        "schema": SCHEMA,
        "inputs": inputs,
        "price_table": {"name": table.name, "as_of": table.as_of},
        "totals": {
            "requests": tot[0], "bytes": tot[1], "partitions": p.partitions, "bad_lines": bad_total,
            "prompt_tokens": tot[2], "read_tokens": tot[3], "written_tokens": tot[4],
            "predicted_hit_rate": _rate(tot[3], tot[2]), "lost_tokens": tot[5], "lost_usd": _usd(tot[5], tot[12], tot[13]),
            "breaks": tot[6], "evicted_entries": p.evicted, "failed_requests": sum(by_status.values()),
        },
        "reported": reported,
        "by_model": models,
        "by_day": days,
        "by_cause": causes,
        "by_where": wheres,
        "top_changes": changes,
        "bad_lines": {"total": bad_total, "by_reason": dict(sorted(p.bad.items())),
                      "examples": [{"where": f"{lbl}:{ln}", "reason": r, "detail": d}
                                   for lbl, ln, r, d in sorted(p.bad_examples)[:20]]},
        "failed_requests": {"total": sum(by_status.values()), "by_status": by_status,
                            "by_model": [{"provider": pm[0], "model": pm[1], "requests": n}
                                         for pm, n in sorted(failed_models.items())]},
        "notes": sorted(set(prices.notes) | set(p.notes)),
    }


def _ranked(groups: dict[tuple[str, ...], list[int]]) -> list[Any]:
    """Most lost tokens first, then most first breaks, then most breaks
    behind another (cause and where rows), then the key."""
    return sorted(groups.items(), key=lambda kv: (-kv[1][1], -kv[1][0], -sum(kv[1][4:5]), kv[0]))
