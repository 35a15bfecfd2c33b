"""Replay recorded traffic through the cache simulator and compare with what
the provider reported: each recording (:mod:`fidelity.traffic.sources`) in
request time order through one :class:`~fidelity.cache.simulator.Simulator`
per provider cache, predicted prompt, read and written tokens beside the
reported ones. Rows and JSON: docs/replay.md."""

from __future__ import annotations

import statistics
from collections import Counter
from collections.abc import Hashable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from . import providers, wire
from .cache._base import as_token_array
from .cache.prompts import CachePrompt, cache_prompt
from .cache.simulator import Prediction, Simulator, Usage
from .errors import FidelityError, InputError, UnknownName
from .traffic import sources
from .traffic.exchange import Exchange

if TYPE_CHECKING:  # pragma: no cover
    from .calibrate import GroupInput

__all__ = [
    "Exchange",
    "Row",
    "Replay",
    "read_recordings",
    "replay",
    "summarize",
    "SCHEMA",
]

SCHEMA = "fidelity.replay/1"


def _family(dialect_or_provider: str | None) -> str | None:
    """The provider family of a dialect or provider name (kept as given when unknown)."""
    if dialect_or_provider is None:
        return None
    try:
        return providers.for_dialect(dialect_or_provider).name
    except UnknownName:
        try:
            return providers.family(dialect_or_provider)
        except UnknownName:
            return dialect_or_provider


#: every recording under a path, each a list of exchanges in recorded order
read_recordings = sources.read_all


@dataclass(frozen=True)
class Row:
    """One request: reported beside predicted."""

    source: str
    index: int
    provider: str | None
    model: str | None
    reported: Usage
    predicted: Prediction | None
    warm_outside: bool = False
    estimated: bool = False
    note: str | None = None
    #: why the row is shown apart and left out of the accuracy figures
    #: (``"server tools"``, ``"server template"``), ``None`` otherwise
    apart: str | None = None
    #: the request's cache view is the very one of the request its predicted
    #: read comes from (the same prompt sent again within the lifetime)
    repeat: bool = False

    def to_json(self) -> dict[str, Any]:
        pred = self.predicted
        return {
            "source": self.source,
            "index": self.index,
            "provider": self.provider,
            "model": self.model,
            "reported": self.reported.to_json(),
            "predicted": None if pred is None else {
                "prompt": pred.prompt, "cache_read": pred.cache_read, "cache_write": pred.cache_write,
                "parent": None if pred.parent is None else str(pred.parent)},
            "warm_outside": self.warm_outside,
            "apart": self.apart,
        }


@dataclass(frozen=True)
class Replay:
    rows: tuple[Row, ...]
    summary: Mapping[str, Any] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        return {"requests": [r.to_json() for r in self.rows], "summary": dict(self.summary)}


def _label(ex: Exchange) -> str:
    return f"{Path(ex.source).name}#{ex.index}"


def replay_recording(exchanges: Sequence[Exchange], *, scale_to_reported: bool = False,
                     **params: Any) -> list[Row]:
    """Rows for one recording: per provider and model, one simulator fed in request
    time order (``params``: to every cache model). ``scale_to_reported``: each request's
    tokens counted in the provider's scale (``SimRequest.scale``, from its reported prompt)."""
    prepared: list[tuple[int, CachePrompt]] = []
    rows: dict[int, Row] = {}
    reported = [Usage(*(ex.usage.get(x) if ex.usage else None for x in ("prompt", "cache_read", "cache_write")))
                for ex in exchanges]
    for k, ex in enumerate(exchanges):
        rep = reported[k]
        if ex.skip or ex.dialect is None:
            rows[k] = Row(ex.source, ex.index, _family(ex.provider or ex.dialect), ex.model, rep, None,
                          note=ex.skip or "unknown provider")
            continue
        try:
            cp = cache_prompt(ex.body, dialect=ex.dialect, model=ex.model, time=ex.time, label=_label(ex),
                              output=ex.output, path=ex.source, endpoint=providers.placed_url(ex.url), provider=ex.provider)
        except FidelityError as exc:
            rows[k] = Row(ex.source, ex.index, _family(ex.dialect), ex.model, rep, None, note=str(exc))
            continue
        if scale_to_reported and ex.usage and ex.usage.get("prompt") and len(cp.request.tokens):
            cp = replace(cp, request=replace(cp.request, scale=ex.usage["prompt"] / len(cp.request.tokens)))
        prepared.append((k, cp))
    sims: dict[tuple[str, str], Simulator] = {}
    # time order, the recorded order among equal or unknown times
    order = sorted(prepared, key=lambda kc: (_sort_time(exchanges, kc[0]), kc[0]))
    seen_read: dict[Hashable, float | None] = {}
    views: dict[Hashable, tuple[bytes, Any]] = {}
    for k, cp in order:
        ex = exchanges[k]
        key = (cp.cache_model, cp.model)
        sim = sims.get(key)
        if sim is None:
            sim = sims[key] = Simulator(cp.cache_model, cp.model, **params)
        rep = reported[k]
        try:
            pred = sim.feed(cp.request)
        except FidelityError as exc:
            rows[k] = Row(ex.source, ex.index, cp.provider, cp.model, rep, None, note=str(exc))
            continue
        part = (key, cp.request.key)
        last = seen_read.get(part)
        # the partition's first read, or its first since every entry it wrote expired
        first = part not in seen_read or (ex.time is not None and last is not None
                                          and ex.time - last > LONGEST_LIFETIME)
        warm = bool(rep.cache_read) and pred.cache_read == 0 and first
        if rep.cache_read:
            seen_read[part] = ex.time
        apart = ex.apart
        view = (as_token_array(cp.request.tokens).tobytes(), cp.request.key)
        views[cp.request.label] = view
        repeat = pred.parent is not None and views.get(pred.parent) == view
        rows[k] = Row(ex.source, ex.index, cp.provider, cp.model, rep, pred, warm and apart is None, cp.estimated,
                      apart=apart, repeat=repeat)
    return [rows[k] for k in sorted(rows)]


#: no provider keeps a cache entry longer: OpenAI's extended retention,
#: ``prompt_cache_retention="24h"`` (https://platform.openai.com/docs/guides/prompt-caching)
LONGEST_LIFETIME = 24 * 3600.0


def _sort_time(exchanges: Sequence[Exchange], k: int) -> float:
    """A request's time, or the last known time before it in the recording."""
    for j in range(k, -1, -1):
        t = exchanges[j].time
        if t is not None:
            return t
    return float("-inf")


def replay(path: str | Path, **params: Any) -> Replay:
    """Replay every recording under ``path`` (and DeepSeek Harness session
    logs, see :func:`fidelity.calibrate`): rows and the per-provider summary."""
    rows: list[Row] = []
    scaled: list[Row] = []
    for rec in read_recordings(path):
        rows.extend(replay_recording(rec, **params))
        scaled.extend(replay_recording(rec, scale_to_reported=True, **params))
    logs = _dsh_logs(Path(path))  # loaded once: for the rows and for the split figures
    dsh_rows = _dsh_rows(logs) if logs is not None else []
    rows.extend(dsh_rows)
    scaled.extend(dsh_rows)
    if not rows:
        raise InputError("no recorded request with a model body under this path", path=path)
    summary = summarize(rows)
    if dsh_rows and logs is not None:  # DeepSeek's unit fitted on one part of the sessions, scored on the other
        from .deepseek_split import split_figures

        summary.setdefault("deepseek", {})["harness_split"] = split_figures(logs).to_json()
    for prov, figures in summarize(scaled).items():
        summary[prov]["scaled_to_reported_prompt"] = {
            k: figures[k] for k in ("hit_miss_agree", "read_within_5pct", "read_within_128", "read_exact")}
    return Replay(tuple(rows), summary)


def _dsh_logs(root: Path) -> list[GroupInput] | None:
    """The DeepSeek Harness session logs under ``root``, read once (``None``: none there)."""
    if root.is_file() or not any(root.rglob("session*.jsonl")):
        return None
    from .calibrate import load

    return load(root)


def _dsh_rows(logs: list[GroupInput]) -> list[Row]:
    """One row per step of the logs' sessions, calibrated on the DeepSeek tokenizer."""
    from . import tokens
    from .calibrate import calibrate

    result = calibrate(logs, tokens.for_model("deepseek-v4-flash", "deepseek"), wire.get("deepseek").render)
    out = []
    for s in result.sessions:
        for i, st in enumerate(s.steps):
            out.append(Row(s.path, i, "deepseek", "deepseek-v4-flash",
                           Usage(st.real_prompt, st.real_cached, None),
                           Prediction(st.predicted_prompt, st.predicted_cached, None, None),
                           warm_outside=st.anchor and st.real_cached > 0 and st.predicted_cached == 0))
    return out



def _share(hits: int, n: int) -> float | None:
    return round(hits / n, 4) if n else None


def summarize(rows: Iterable[Row]) -> dict[str, Any]:
    """Per provider: requests, how many report reads, hit-vs-miss agreement,
    reads within 5 % and within one 128-token step, exact reads, prompt
    error (median relative), and how many were warmed outside the recording."""
    by: dict[str, list[Row]] = {}
    for r in rows:
        by.setdefault(r.provider or "unknown", []).append(r)
    out: dict[str, Any] = {}
    for prov, rs in sorted(by.items()):
        sim = [r for r in rs if r.predicted is not None]
        scored = [r for r in sim if r.reported.cache_read is not None and not r.warm_outside and r.apart is None]
        hits = [r for r in scored if r.reported.cache_read]
        # (predicted, reported) reads of the scored rows: both known there
        reads: list[tuple[int, int]] = [(r.predicted.cache_read, r.reported.cache_read)  # type: ignore[misc,union-attr]
                                         for r in scored]
        agree = sum((p > 0) == (q > 0) for p, q in reads)
        within5 = sum(abs(p - q) <= 0.05 * q for p, q in reads if q)
        step = sum(abs(p - q) <= 128 for p, q in reads)
        exact = sum(p == q for p, q in reads)
        rel = [abs(r.predicted.prompt - r.reported.prompt) / r.reported.prompt  # type: ignore
               for r in sim if r.reported.prompt and r.predicted.prompt is not None]  # type: ignore
        apart = Counter(r.note or "not simulated" if r.predicted is None else r.apart for r in rs
                        if r.predicted is None or r.apart is not None)
        out[prov] = {
            "requests": len(rs),
            # in the accuracy figures / left out, by reason (the one rule, fidelity.traffic.apart)
            "scored": len(scored),
            "set_apart": dict(sorted(apart.items())),
            "simulated": len(sim),
            "skipped": len(rs) - len(sim),
            "reporting_reads": len(scored),
            "warm_outside": sum(r.warm_outside for r in sim),
            "server_tools": sum(r.apart == "server tools" for r in sim),
            "server_template": sum(r.apart == "server template" for r in sim),
            "server_state": sum(r.apart == "server state" for r in sim),
            # the same prompt sent again: a provider that reads only some of them caps every
            # simulator's agreement (docs/replay.md, "Repeats")
            "repeats": {"rows": sum(r.repeat for r in scored),
                        "reported_hits": sum(r.repeat and bool(r.reported.cache_read) for r in scored)},
            "reported_hits": len(hits),
            "hit_miss_agree": _share(agree, len(scored)),
            "read_within_5pct": _share(within5, len(hits)),
            "read_within_128": _share(step, len(scored)),
            "read_exact": _share(exact, len(scored)),
            "prompt_rel_error_median": round(statistics.median(rel), 4) if rel else None,
            "estimated_tokens": any(r.estimated for r in sim),
        }
    return out
