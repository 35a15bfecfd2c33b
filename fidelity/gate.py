"""The CI gate: compare lost cached tokens and their cost against a baseline.

Rows (:mod:`fidelity.gate_rows`) and thresholds from ``[tool.fidelity.gate]``
give a :class:`GateResult` (exit 1 on a failure, 2 on bad input, else 0); the
rules: docs/ci-and-capture.md, "The gate". Views: :mod:`fidelity.gate_output`."""

from __future__ import annotations

import fnmatch
import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from . import formats
from .errors import InputError
from .gate_rows import (
    REPORT_SCHEMA,
    Row,
    figure,
    rows_from_report,
    rows_from_report_json,
    rows_from_score,
    rows_from_snapshots,
)
from .jsonio import atomic_write, load, load_toml

__all__ = [
    "BASELINE_SCHEMA",
    "GATE_SCHEMA",
    "REPORT_SCHEMA",
    "Row",
    "Thresholds",
    "Finding",
    "GateResult",
    "load_config",
    "evaluate",
    "rows_from_report",
    "rows_from_report_json",
    "narrow_baseline",
    "rows_from_snapshots",
    "rows_from_score",
    "load_baseline",
    "baseline_rows",
    "write_baseline",
]

BASELINE_SCHEMA = "fidelity.gate-baseline/1"


@dataclass(frozen=True)
class Thresholds:
    """Allowed rises against the baseline (see :func:`evaluate`)."""

    max_lost_tokens_increase: float = 0.0
    max_lost_tokens_increase_pct: float = 0.0
    max_cost_increase_usd: float = 0.0
    max_cost_increase_pct: float = 0.0
    cache_preserving: tuple[str, ...] = ()
    baseline: str = "reports/baseline.json"

    def preserving(self, row: Row) -> bool:
        return row.cache_preserving or any(
            fnmatch.fnmatchcase(row.variant, pat) or fnmatch.fnmatchcase(row.key, pat) for pat in self.cache_preserving
        )


_NUMERIC = ("max_lost_tokens_increase", "max_lost_tokens_increase_pct", "max_cost_increase_usd", "max_cost_increase_pct")


def load_config(path: str | Path | None = "pyproject.toml") -> Thresholds:
    """Thresholds from ``[tool.fidelity.gate]`` of a ``pyproject.toml``
    (defaults when the file or table is absent). Unknown keys, negative or
    non-numeric thresholds raise :class:`InputError`."""
    if path is None or not Path(path).is_file():
        return Thresholds()
    p = Path(path)
    doc = load_toml(p)
    table = doc.get("tool", {}).get("fidelity", {}).get("gate", {})
    if not isinstance(table, dict):
        raise InputError("[tool.fidelity.gate] must be a table", path=p)
    known = set(_NUMERIC) | {"cache_preserving", "baseline"}
    unknown = sorted(set(table) - known)
    if unknown:
        raise InputError(f"[tool.fidelity.gate]: unknown key(s) {', '.join(unknown)}; known: {', '.join(sorted(known))}", path=p)
    kwargs: dict[str, Any] = {}
    for key in _NUMERIC:
        if key in table:
            value = table[key]
            if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value) or value < 0:
                raise InputError(f"[tool.fidelity.gate] {key} must be a number >= 0, got {value!r}", path=p)
            kwargs[key] = float(value)
    if "cache_preserving" in table:
        pats = table["cache_preserving"]
        if not isinstance(pats, list) or not all(isinstance(x, str) for x in pats):
            raise InputError("[tool.fidelity.gate] cache_preserving must be a list of strings", path=p)
        kwargs["cache_preserving"] = tuple(pats)
    if "baseline" in table:
        if not isinstance(table["baseline"], str):
            raise InputError("[tool.fidelity.gate] baseline must be a path string", path=p)
        kwargs["baseline"] = table["baseline"]
    return Thresholds(**kwargs)


# -- evaluation ------------------------------------------------------------------


@dataclass(frozen=True)
class Finding:
    """What the gate says about one row. ``kind``: ``cache_lost``,
    ``regression``, ``new``, ``removed``, ``skipped``, ``improved`` or ``ok``."""

    row: Row
    kind: str
    message: str
    failed: bool
    baseline: Row | None = None


#: the schema of :meth:`GateResult.to_json`
GATE_SCHEMA = "fidelity.gate/1"


@dataclass
class GateResult:
    findings: list[Finding] = field(default_factory=list)
    baseline_path: str | None = None

    @property
    def failures(self) -> list[Finding]:
        return [f for f in self.findings if f.failed]

    @property
    def exit_code(self) -> int:
        return 1 if self.failures else 0

    def to_json(self) -> dict[str, Any]:
        """The ``--json`` view (``fidelity.gate/1``): the verdict, then every finding
        in the order evaluated with its row and its baseline row."""
        return {"schema": GATE_SCHEMA, "passed": not self.failures, "failures": len(self.failures),
                "baseline": self.baseline_path,
                "findings": [{"kind": f.kind, "failed": f.failed, "message": f.message, "row": f.row.to_json(),
                              "baseline": None if f.baseline is None else f.baseline.to_json()}
                             for f in self.findings]}


def _allowed(base: float, abs_tol: float, pct: float) -> float:
    return max(abs_tol, abs(base) * pct / 100.0)


def evaluate(current: Sequence[Row], baseline: Sequence[Row] | None, th: Thresholds) -> GateResult:
    """A finding per row: it fails when a cache-preserving row loses any token, its tokens or
    cost per fork rise past ``max(absolute, percent of baseline)``, its price appears or
    vanishes, or it is in only one of baseline and current rows."""
    result = GateResult()
    base = {r.key: r for r in baseline or ()}
    for row in current:
        why = f" ({row.detail})" if row.detail else ""
        old = base.get(row.key)
        if row.skipped is not None and old is not None:
            was_measured = old.skipped is None
            message = (f"{row.variant}: skipped now ({row.skipped})" + (
                f"; the baseline measured {formats.count(old.lost_tokens)} lost tokens per fork. If this is on purpose, "
                "update the baseline (--update-baseline)" if was_measured else ""))
            result.findings.append(Finding(row, "skipped", message, was_measured, old))
            continue
        if row.skipped is None and th.preserving(row) and row.lost_tokens > 0:
            result.findings.append(Finding(row, "cache_lost", f"{row.variant} is declared cache-preserving but loses "
                                           f"{formats.count(row.lost_tokens)} cached tokens per fork{why}", True, old))
            continue
        if old is None:
            state = f"skipped ({row.skipped})" if row.skipped is not None else (
                f"loses {formats.count(row.lost_tokens)} tokens per fork{why}")
            result.findings.append(Finding(row, "new", f"{row.variant}: not in the baseline (key {row.key}); {state}; "
                                           "if this is on purpose, update the baseline (--update-baseline)", True))
            continue
        problems = []
        d_tok = row.lost_tokens - old.lost_tokens
        if d_tok > _allowed(old.lost_tokens, th.max_lost_tokens_increase, th.max_lost_tokens_increase_pct):
            problems.append(f"lost tokens per fork rose {formats.count(old.lost_tokens)} → {formats.count(row.lost_tokens)} (+{formats.count(d_tok)})")
        if (row.usd_per_fork is None) != (old.usd_per_fork is None):
            problems.append(f"cost per fork {formats.usd(old.usd_per_fork, 6, 'no price')} in the baseline, "
                            f"{formats.usd(row.usd_per_fork, 6, 'no price')} now")
        elif row.usd_per_fork is not None and old.usd_per_fork is not None:
            d_usd = row.usd_per_fork - old.usd_per_fork
            if d_usd > _allowed(old.usd_per_fork, th.max_cost_increase_usd, th.max_cost_increase_pct) + 1e-12:
                problems.append(f"cost per fork rose {formats.usd(old.usd_per_fork, 6, 'no price')} → {formats.usd(row.usd_per_fork, 6, 'no price')}")
        if problems:
            result.findings.append(Finding(row, "regression", f"{row.variant}: " + "; ".join(problems) + why, True, old))
        elif d_tok < 0:
            result.findings.append(Finding(row, "improved", f"{row.variant}: lost tokens per fork fell "
                                           f"{formats.count(old.lost_tokens)} → {formats.count(row.lost_tokens)}", False, old))
        else:
            result.findings.append(Finding(row, "ok", f"{row.variant}: {formats.count(row.lost_tokens)} lost tokens per fork "
                                           f"(baseline {formats.count(old.lost_tokens)})", False, old))
    keys = {r.key for r in current}
    for old in baseline or ():
        if old.key not in keys:
            result.findings.append(Finding(old, "removed", f"{old.variant}: in the baseline (key {old.key}) but not "
                                           "measured now; if this is on purpose, update the baseline "
                                           "(--update-baseline)", True, old))
    return result


def narrow_baseline(baseline: Sequence[Row], *, variants: Sequence[str] | None = None,
                    dialects: Sequence[str] | None = None) -> list[Row]:
    """The baseline rows a narrowed report run (``--variants``, ``--providers``)
    measures: rows keyed ``session::variant::dialect`` outside the selection go."""
    def chosen(parts: list[str]) -> bool:
        return len(parts) != 3 or ((not variants or parts[1] in variants) and (not dialects or parts[2] in dialects))

    return [row for row in baseline if chosen(row.key.split("::"))]


# -- baselines --------------------------------------------------------------------


def write_baseline(path: str | Path, rows: Sequence[Row], *, source: str) -> None:
    """Write the baseline file: schema, where the rows came from, the rows."""
    doc = {"schema": BASELINE_SCHEMA, "source": source, "rows": [r.to_json() for r in rows]}
    atomic_write(path, formats.json_doc(doc))


_BASELINE_KEYS = ("schema", "source", "rows")
_ROW_KEYS = ("key", "variant", "lost_tokens", "usd_per_fork", "fixture", "line", "detail", "skipped")


def _baseline_row(r: Any, bad: Any, ptr: str) -> Row:
    if not isinstance(r, dict):
        raise bad("a baseline row must be an object", ptr)
    unknown = [k for k in r if k not in _ROW_KEYS]
    if unknown:
        raise bad(f"unknown key {unknown[0]!r} in a baseline row; known: {', '.join(_ROW_KEYS)}", ptr)
    for k in ("key", "variant"):
        if not isinstance(r.get(k), str) or not r[k]:
            raise bad(f"{k} must be a non-empty string", f"{ptr}/{k}")
    for k in ("fixture", "detail", "skipped"):
        if r.get(k) is not None and not isinstance(r[k], str):
            raise bad(f"{k} must be a string or null", f"{ptr}/{k}")
    line = r.get("line")
    if line is not None and (isinstance(line, bool) or not isinstance(line, int) or line < 1):
        raise bad("line must be a positive integer or null", f"{ptr}/line")
    if "lost_tokens" not in r:
        raise bad("a baseline row needs lost_tokens", ptr)
    lost = figure(r["lost_tokens"], "lost_tokens", f"{ptr}/lost_tokens", bad)
    if "usd_per_fork" not in r:
        raise bad("a baseline row needs usd_per_fork (null: no price)", ptr)
    usd = figure(r["usd_per_fork"], "usd_per_fork", f"{ptr}/usd_per_fork", bad, optional=True)
    assert lost is not None  # not optional
    return Row(key=r["key"], variant=r["variant"], lost_tokens=lost, usd_per_fork=usd, fixture=r.get("fixture"),
               line=line, detail=r.get("detail"), skipped=r.get("skipped"))


def baseline_rows(doc: Any, *, path: str | Path | None = None) -> list[Row]:
    """The rows of a baseline document (``fidelity.gate-baseline/1``), validated:
    every member known, figures finite numbers >= 0, one row per key, at least
    one row; else :class:`InputError` naming the file and JSON pointer."""
    def bad(problem: str, pointer: str) -> InputError:
        return InputError(problem, path=path, pointer=pointer)

    if not isinstance(doc, dict):
        raise bad("a baseline must be a JSON object", "")
    unknown = [k for k in doc if k not in _BASELINE_KEYS]
    if unknown:
        raise bad(f"unknown key {unknown[0]!r} in a baseline; known: {', '.join(_BASELINE_KEYS)}", "")
    if not isinstance(doc.get("source"), str):
        raise bad("source must be a string", "/source")
    rows_in = doc.get("rows")
    if not isinstance(rows_in, list):
        raise bad("baseline rows must be a list", "/rows")
    if not rows_in:
        raise bad("the baseline holds no rows; write it with --update-baseline", "/rows")
    out: list[Row] = []
    seen: dict[str, int] = {}
    for i, r in enumerate(rows_in):
        row = _baseline_row(r, bad, f"/rows/{i}")
        if row.key in seen:
            raise bad(f"a second row for {row.key!r} (the first is /rows/{seen[row.key]}); "
                      "the gate needs one per key", f"/rows/{i}/key")
        seen[row.key] = i
        out.append(row)
    return out


def load_baseline(path: str | Path, *, create_with: str = "fidelity gate --update-baseline") -> list[Row]:
    """Rows of a baseline written by :func:`write_baseline`
    (``fidelity.gate-baseline/1``), or of a saved report (``fidelity.report/1``);
    any other document is :class:`InputError` naming the file. A missing file raises :class:`InputError` that says
    how to create one (``create_with``: the command to show)."""
    p = Path(path)
    if not p.exists():
        raise InputError(f"no baseline; create it with `{create_with}`", path=p)
    doc = load(p)
    if isinstance(doc, dict) and doc.get("schema") == BASELINE_SCHEMA:
        return baseline_rows(doc, path=p)
    if isinstance(doc, dict) and doc.get("schema") == REPORT_SCHEMA:
        return rows_from_report(doc, path=p)
    found = doc.get("schema") if isinstance(doc, dict) else None
    what = f"schema {found!r}" if isinstance(found, str) else "no schema"
    raise InputError(f"not a gate baseline ({what}); a baseline is the {BASELINE_SCHEMA} file that "
                     f"`{create_with}` writes, or a saved {REPORT_SCHEMA} report", path=p)
