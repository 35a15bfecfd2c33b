"""The gate's rows: one gated figure per (fixture, variant) or child snapshot,
from the report run in-process, a saved report or a snapshot folder; figures
validated where read (finite numbers >= 0, one row per key)."""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from .errors import InputError

__all__ = ["REPORT_SCHEMA", "Row", "figure", "rows_from_report", "rows_from_report_json", "rows_from_score",
           "rows_from_snapshots"]

#: the report JSON's schema: written by :mod:`fidelity.report` (which imports it
#: from here, the lower layer) and read back by the gate
REPORT_SCHEMA = "fidelity.report/1"


@dataclass(frozen=True)
class Row:
    """One gated figure: a variant on a fixture (or a child snapshot)."""

    key: str
    variant: str
    lost_tokens: float
    usd_per_fork: float | None = None
    fixture: str | None = None
    line: int | None = None
    cache_preserving: bool = False
    detail: str | None = None
    #: why the combination could not be measured (``None``: measured)
    skipped: str | None = None

    def to_json(self) -> dict[str, Any]:
        return {k: v for k, v in asdict(self).items()
                if k != "cache_preserving" and not (k == "skipped" and v is None)}



def figure(value: Any, name: str, pointer: str, bad: Callable[[str, str], InputError], *,
           optional: bool = False) -> float | None:
    """A gated figure as a float (``None`` for a null one when ``optional``), else ``bad``'s
    error naming ``name`` at ``pointer``: a finite number >= 0, never a string (``"NaN"``)."""
    if value is None and optional:
        return None

    def refused(why: str) -> InputError:
        return bad(f"{name} must be a finite number >= 0{' or null' if optional else ''} ({why}), got {value!r}",
                   pointer)

    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise refused("not a number")
    try:
        out = float(value)
    except OverflowError:
        raise refused("too large a number") from None
    if not math.isfinite(out) or out < 0:
        raise refused("not a finite number >= 0")
    return out


# -- rows from a report or from snapshots --------------------------------------------


def rows_from_report(obj: Any, *, path: str | Path | None = None) -> list[Row]:
    """Rows from a saved report: the ``fidelity.report/1`` document that
    ``fidelity report`` writes (:func:`rows_from_report_json`); any other
    document is :class:`InputError` naming the file and the schema expected."""
    if isinstance(obj, dict) and obj.get("schema") == REPORT_SCHEMA:
        return rows_from_report_json(obj, path=path)
    found = obj.get("schema") if isinstance(obj, dict) else None
    what = f"schema {found!r}" if isinstance(found, str) else "no schema"
    raise InputError(f"not a fidelity report ({what}); --report reads the {REPORT_SCHEMA} JSON "
                     "that `fidelity report` writes", path=path)


def _score_row(session: str, variant: str, dialect: str, lost: float, usd: float | None, fixture: str | None,
               cache_preserving: bool, cause: str | None, cause_detail: str | None, pointer: str | None,
               breaks: int = 0) -> Row:
    """One report row as a gated row, in-process or saved alike (``breaks``: the
    length of the row's fix list, the first being the cause)."""
    detail = (cause or "") + (f": {cause_detail}" if cause_detail else "")
    if pointer:
        detail += f" at {pointer}"
    if breaks > 1:
        detail += f" (+{breaks - 1} more break{'s' if breaks > 2 else ''}: fidelity diff lists them)"
    return Row(key=f"{session}::{variant}::{dialect}", variant=f"{variant} ({dialect}, {session})",
               lost_tokens=float(lost), usd_per_fork=None if usd is None else round(usd, 6),
               fixture=fixture or session, line=None, cache_preserving=cache_preserving, detail=detail or None)


def _skipped_row(session: str, variant: str, dialect: str, fixture: str | None, reason: str) -> Row:
    return Row(key=f"{session}::{variant}::{dialect}", variant=f"{variant} ({dialect}, {session})",
               lost_tokens=0.0, fixture=fixture or session, skipped=reason or "skipped")


def rows_from_score(result: Any) -> list[Row]:
    """Rows from a :class:`fidelity.score.Score`: one per session × variant × dialect
    (cost per fork: one child request's, USD to 6 places), skipped ones marked ``skipped``."""
    rows = []
    by_name = {s.name: s for s in getattr(result, "sessions", ())}
    for r in result.rows:
        file = getattr(by_name.get(r.session), "file", None)
        rows.append(_score_row(r.session, r.variant, r.dialect, r.lost, r.cost.per_child if r.cost else None, file,
                               bool(r.cache_preserving), r.cause, r.cause_detail, r.pointer,
                               len(getattr(r, "breaks", ()))))
    for k in getattr(result, "skipped", ()):
        rows.append(_skipped_row(k.session, k.variant, k.dialect, getattr(by_name.get(k.session), "file", None),
                                 k.reason))
    return rows


def rows_from_report_json(doc: dict[str, Any], *, path: str | Path | None = None) -> list[Row]:
    """Rows from a saved report (``fidelity.report/1``): the rows
    :func:`rows_from_score` gives for the run that wrote it."""
    def bad(problem: str, pointer: str) -> InputError:
        return InputError(problem, path=path, pointer=pointer)

    sessions = doc.get("sessions", [])
    files = {s["name"]: s["file"] for s in (sessions if isinstance(sessions, list) else ())
             if isinstance(s, dict) and isinstance(s.get("name"), str) and isinstance(s.get("file"), str)}
    rows_in, skipped_in = doc.get("rows"), doc.get("skipped", [])
    if not isinstance(rows_in, list):
        raise bad("a fidelity.report/1 document needs a \"rows\" array", "/rows")
    if not isinstance(skipped_in, list):
        raise bad("\"skipped\" must be an array", "/skipped")
    rows: list[Row] = []
    for i, r in enumerate(rows_in):
        ptr = f"/rows/{i}"
        if not isinstance(r, dict):
            raise bad("expected an object", ptr)
        names = [r.get(k) for k in ("session", "variant", "provider")]
        if not all(isinstance(x, str) and x for x in names):
            raise bad("a row needs session, variant and provider strings", ptr)
        tokens, div, cost = r.get("tokens"), r.get("divergence") or {}, r.get("cost")
        lost_in = tokens.get("lost") if isinstance(tokens, dict) else None
        lost = figure(lost_in, "tokens.lost", ptr + "/tokens/lost", bad)
        if "cost" not in r:
            raise bad("a row needs a cost (an object, or null: no price)", ptr)
        usd: float | None = None
        if cost is not None:
            if not isinstance(cost, dict) or "usd_per_child" not in cost:
                raise bad("cost must be an object with usd_per_child, or null (no price)", ptr + "/cost")
            usd = figure(cost["usd_per_child"], "cost.usd_per_child", ptr + "/cost/usd_per_child", bad)
        assert lost is not None  # not optional
        if not isinstance(div, dict):
            raise bad("divergence must be an object", ptr + "/divergence")
        text = {k: div.get(k) if isinstance(div.get(k), str) else None for k in ("cause", "cause_detail", "pointer")}
        listed = r.get("breaks", [])
        if not isinstance(listed, list):
            raise bad("breaks must be a list (the row's fix list)", ptr + "/breaks")
        session, variant, dialect = (str(x) for x in names)
        rows.append(_score_row(session, variant, dialect, lost, usd, files.get(session),
                               r.get("cache_preserving") is True, text["cause"], text["cause_detail"], text["pointer"],
                               len(listed)))
    for i, k in enumerate(skipped_in):
        names = [k.get(x) if isinstance(k, dict) else None for x in ("session", "variant", "provider")]
        if not all(isinstance(x, str) and x for x in names):
            raise bad("a skipped entry needs session, variant and provider strings", f"/skipped/{i}")
        reason = k.get("reason") if isinstance(k.get("reason"), str) else ""
        session, variant, provider = (str(x) for x in names)  # strings: checked just above
        rows.append(_skipped_row(session, variant, provider, files.get(session), reason))
    if not rows:
        raise bad("the report holds no rows", "/rows")
    pointers = [f"/rows/{i}" for i in range(len(rows_in))] + [f"/skipped/{i}" for i in range(len(skipped_in))]
    seen: dict[str, str] = {}
    for r, ptr in zip(rows, pointers, strict=True):
        if r.key in seen:
            raise bad(f"a second row for {r.key!r} (the first is {seen[r.key]}); the gate needs one per session, "
                      "variant and provider", ptr)
        seen[r.key] = ptr
    return rows


def rows_from_snapshots(folder: str | Path, *, prices: Any = None, relative_to: str | Path | None = None,
                        model: str | None = None, skipped_out: list[Any] | None = None) -> list[Row]:
    """One row per child of a snapshot folder, diffed against the request its cache
    reads from (:func:`fidelity.pairs.by_cache.pairs_by_cache`), pointing at the line
    of its first divergent byte; a pair not compared goes to ``skipped_out``."""
    from .diff.views import annotation
    from .pairs.by_cache import pairs_by_cache
    from .pairs.folder import Skipped, compare_pair, summary

    rows = []
    skipped: list[Skipped] = []
    base = Path(relative_to) if relative_to is not None else None
    for pair in pairs_by_cache(folder):  # each child against the request its cache reads from
        parent, child = pair.parent, pair.child
        res = compare_pair(parent, child, model=model, prices=prices, lenient=True)
        if isinstance(res, Skipped):
            skipped.append(res)
            continue
        detail = annotation(res)
        shown = child.path
        if base is not None:
            try:
                shown = child.path.resolve().relative_to(Path(base).resolve())
            except ValueError:
                pass
        at = res.raw.first_divergent_byte
        rows.append(Row(
            key=child.path.name,
            variant=child.path.name,
            lost_tokens=float(res.cache.lost),
            usd_per_fork=res.cost.usd_lost if res.cost else None,
            fixture=str(shown),
            # the line holding that byte (a snapshot's body starts on line 2)
            line=1 + (child.meta is not None) + (0 if at is None else child.body[:at].count(b"\n")),
            detail=f"{detail}; parent {parent.path.name} ({pair.how})",
        ))
    if skipped_out is not None:
        skipped_out.extend(skipped)
    if not rows:
        note = summary(skipped)
        raise InputError("no (parent, child) pair of requests in this folder" + (f"; {note}" if note else ""),
                         path=folder)
    return rows
