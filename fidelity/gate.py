"""The CI gate: compare lost cached tokens and their cost against a baseline.

Inputs are *rows*: one per (fixture, variant), each with the tokens a fork
loses per request, the dollars that costs, and whether the variant is
declared cache-preserving. Rows come from the report run in-process (the
default), from a saved report (``reports/fidelity-report.json``, written by
``fidelity report``; schema ``fidelity.report/1``), or from a snapshot folder
(each child request diffed against its parent with
:func:`fidelity.diff.compare`).

A row **fails** the gate (exit 1) when

* it is declared cache-preserving and loses any token at all, or
* its lost tokens rise above the baseline by more than
  ``max(max_lost_tokens_increase, max_lost_tokens_increase_pct% of baseline)``,
  or its cost per fork by more than
  ``max(max_cost_increase_usd, max_cost_increase_pct% of baseline)``
  (an absolute floor and a relative allowance; the larger one applies, like
  ``math.isclose``'s ``abs_tol`` / ``rel_tol``), or
* it is in the baseline but no longer measured: missing from the current
  rows, or skipped (a variant that started raising). A row that goes away on
  purpose goes away with the baseline: ``fidelity gate --update-baseline``.

Bad input or configuration exits 2; otherwise 0. Thresholds live in
``pyproject.toml``::

    [tool.fidelity.gate]
    baseline = "reports/baseline.json"
    max_lost_tokens_increase = 0        # tokens per fork
    max_lost_tokens_increase_pct = 0    # percent of the baseline figure
    max_cost_increase_usd = 0.0         # dollars per fork
    max_cost_increase_pct = 0
    cache_preserving = ["completed-turn", "*fork*"]   # fnmatch on variant or key

Outputs: plain text, GitHub workflow commands (``::error file=...,line=...::``,
https://docs.github.com/en/actions/reference/workflows-and-actions/workflow-commands,
escaped as ``@actions/core``'s ``command.ts`` does) and JUnit XML (the
schema CI servers read: https://github.com/testmoapp/junitxml).
"""

from __future__ import annotations

import fnmatch
import math
import tomllib
from collections.abc import Iterable, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import orjson

from .errors import InputError
from .jsonio import atomic_write, load

__all__ = [
    "BASELINE_SCHEMA",
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
    "baseline_bytes",
    "write_baseline",
    "format_text",
    "format_github",
    "junit_xml",
]

BASELINE_SCHEMA = "fidelity.gate-baseline/1"
#: the saved report's schema (``fidelity.report._data.SCHEMA``)
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


@dataclass(frozen=True)
class Thresholds:
    """Allowed rises against the baseline (see the module doc)."""

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
    if path is None:
        return Thresholds()
    p = Path(path)
    if not p.is_file():
        return Thresholds()
    try:
        doc = tomllib.loads(p.read_text("utf-8"))
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
        raise InputError(f"not valid TOML: {exc}", path=p) from None
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


def _allowed(base: float, abs_tol: float, pct: float) -> float:
    return max(abs_tol, abs(base) * pct / 100.0)


def _fmt_usd(x: float | None) -> str:
    return "n/a" if x is None else f"${x:.6f}"


def evaluate(current: Sequence[Row], baseline: Sequence[Row] | None, th: Thresholds) -> GateResult:
    """Apply the rules of the module doc to every row."""
    result = GateResult()
    base = {r.key: r for r in baseline or ()}
    for row in current:
        why = f" ({row.detail})" if row.detail else ""
        old = base.get(row.key)
        if row.skipped is not None:
            was_measured = old is not None and old.skipped is None
            message = (f"{row.variant}: skipped now ({row.skipped})" + (
                f"; the baseline measured {old.lost_tokens:,.0f} lost tokens per fork. If this is on purpose, "
                "update the baseline (--update-baseline)" if was_measured and old is not None else ""))
            result.findings.append(Finding(row, "skipped", message, was_measured, old))
            continue
        if th.preserving(row) and row.lost_tokens > 0:
            result.findings.append(Finding(row, "cache_lost", f"{row.variant} is declared cache-preserving but loses "
                                           f"{row.lost_tokens:,.0f} cached tokens per fork{why}", True, old))
            continue
        if old is None:
            result.findings.append(Finding(row, "new", f"{row.variant}: not in the baseline; loses "
                                           f"{row.lost_tokens:,.0f} tokens per fork{why}", False))
            continue
        problems = []
        d_tok = row.lost_tokens - old.lost_tokens
        if d_tok > _allowed(old.lost_tokens, th.max_lost_tokens_increase, th.max_lost_tokens_increase_pct):
            problems.append(f"lost tokens per fork rose {old.lost_tokens:,.0f} → {row.lost_tokens:,.0f} (+{d_tok:,.0f})")
        if row.usd_per_fork is not None and old.usd_per_fork is not None:
            d_usd = row.usd_per_fork - old.usd_per_fork
            if d_usd > _allowed(old.usd_per_fork, th.max_cost_increase_usd, th.max_cost_increase_pct) + 1e-12:
                problems.append(f"cost per fork rose {_fmt_usd(old.usd_per_fork)} → {_fmt_usd(row.usd_per_fork)}")
        if problems:
            result.findings.append(Finding(row, "regression", f"{row.variant}: " + "; ".join(problems) + why, True, old))
        elif d_tok < 0:
            result.findings.append(Finding(row, "improved", f"{row.variant}: lost tokens per fork fell "
                                           f"{old.lost_tokens:,.0f} → {row.lost_tokens:,.0f}", False, old))
        else:
            result.findings.append(Finding(row, "ok", f"{row.variant}: {row.lost_tokens:,.0f} lost tokens per fork "
                                           f"(baseline {old.lost_tokens:,.0f})", False, old))
    keys = {r.key for r in current}
    for old in baseline or ():
        if old.key not in keys:
            result.findings.append(Finding(old, "removed", f"{old.variant}: in the baseline but not measured now; "
                                           "if this is on purpose, update the baseline (--update-baseline)",
                                           old.skipped is None, old))
    return result


def narrow_baseline(baseline: Sequence[Row], *, variants: Sequence[str] | None = None,
                    dialects: Sequence[str] | None = None) -> list[Row]:
    """The baseline rows a narrowed report run (``--variants``,
    ``--providers``) is expected to measure: rows keyed
    ``session::variant::dialect`` outside the selection are left out, so
    that they do not count as removed."""
    out = []
    for row in baseline:
        parts = row.key.split("::")
        if len(parts) == 3:
            if variants and parts[1] not in variants:
                continue
            if dialects and parts[2] not in dialects:
                continue
        out.append(row)
    return out


# -- rows from a report or from snapshots --------------------------------------------

_NAME_KEYS = ("variant", "name", "id")
_LOST_KEYS = ("lost_tokens_per_fork", "lost_tokens", "lost")
_COST_KEYS = ("usd_per_fork", "cost_per_fork", "per_child", "usd_lost_per_fork", "usd_lost_per_request", "usd_lost")
_FIXTURE_KEYS = ("fixture", "file", "path", "source", "child_path", "session")


def _as_float(v: int | float, key: str) -> float:
    try:
        return float(v)
    except OverflowError:
        raise InputError(f"{key} is too large a number ({len(str(v))} digits)") from None


def _num(obj: dict[str, Any], keys: Iterable[str]) -> float | None:
    for k in keys:
        v = obj.get(k)
        if isinstance(v, (int, float)) and not isinstance(v, bool):
            return _as_float(v, k)
    for nest in ("cache", "cost", "loss", "lost", "per_fork"):
        sub = obj.get(nest)
        if isinstance(sub, dict):
            v = _num_flat(sub, keys)
            if v is not None:
                return v
    return None


def _num_flat(obj: dict[str, Any], keys: Iterable[str]) -> float | None:
    for k in keys:
        v = obj.get(k)
        if isinstance(v, (int, float)) and not isinstance(v, bool):
            return _as_float(v, k)
    return None


def _str(obj: dict[str, Any], keys: Iterable[str]) -> str | None:
    for k in keys:
        v = obj.get(k)
        if isinstance(v, str) and v:
            return v
    return None


def rows_from_report(obj: Any, *, path: str | Path | None = None) -> list[Row]:
    """Rows from a report JSON result: every object that names a variant and
    carries a lost-token figure (``lost_tokens`` / ``lost``, directly or under
    ``cache``), inheriting a ``fixture``/``path`` from an enclosing object.
    ``cache_preserving`` / ``preserves_cache`` flags are honoured."""
    if isinstance(obj, dict) and obj.get("schema") == REPORT_SCHEMA:
        return rows_from_report_json(obj, path=path)
    rows: list[Row] = []

    def walk(node: Any, fixture: str | None, pointer: str) -> None:
        if isinstance(node, dict):
            here = _str(node, _FIXTURE_KEYS) or fixture
            name = _str(node, _NAME_KEYS)
            lost = _num(node, _LOST_KEYS)
            if name is not None and lost is not None:
                cause = node.get("cause")
                detail = None
                if isinstance(cause, dict):
                    detail = ": ".join(str(x) for x in (cause.get("kind"), cause.get("detail")) if x)
                elif isinstance(cause, str):
                    detail = ": ".join(str(x) for x in (cause, node.get("cause_detail")) if x)
                elif isinstance(node.get("detail"), str):
                    detail = node["detail"]
                line = node.get("line") if isinstance(node.get("line"), int) else None
                dialect = node.get("dialect") if isinstance(node.get("dialect"), str) else None
                key = "::".join(x for x in (here, name, dialect) if x)
                rows.append(Row(key=key, variant=name, lost_tokens=lost, usd_per_fork=_num(node, _COST_KEYS),
                                fixture=here, line=line,
                                cache_preserving=bool(node.get("cache_preserving") or node.get("preserves_cache")),
                                detail=detail))
                return
            for k, v in node.items():
                walk(v, here, f"{pointer}/{k}")
        elif isinstance(node, list):
            for i, v in enumerate(node):
                walk(v, fixture, f"{pointer}/{i}")

    try:
        walk(obj, None, "")
    except InputError as exc:
        raise (exc.at(path) if path is not None else exc) from None
    if not rows:
        raise InputError("no variant rows found (objects with a variant name and lost tokens)", path=path)
    seen: set[str] = set()
    for r in rows:
        if r.key in seen:
            raise InputError(f"two rows for {r.key!r}; the gate needs one per fixture and variant", path=path)
        seen.add(r.key)
    return rows


def _score_row(session: str, variant: str, dialect: str, lost: float, usd: float | None, fixture: str | None,
               cache_preserving: bool, cause: str | None, cause_detail: str | None, pointer: str | None) -> Row:
    """One report row as a gated row; the in-process report and the saved
    report both come through here, so that they key and word rows alike."""
    detail = (cause or "") + (f": {cause_detail}" if cause_detail else "")
    if pointer:
        detail += f" at {pointer}"
    return Row(key=f"{session}::{variant}::{dialect}", variant=f"{variant} ({dialect}, {session})",
               lost_tokens=float(lost), usd_per_fork=None if usd is None else round(usd, 6),
               fixture=fixture or session, line=None, cache_preserving=cache_preserving, detail=detail or None)


def _skipped_row(session: str, variant: str, dialect: str, fixture: str | None, reason: str) -> Row:
    return Row(key=f"{session}::{variant}::{dialect}", variant=f"{variant} ({dialect}, {session})",
               lost_tokens=0.0, fixture=fixture or session, skipped=reason or "skipped")


def rows_from_score(result: Any) -> list[Row]:
    """Rows from a :class:`fidelity.score.Score` (the report's result
    object): one per session × variant × dialect, cost per fork being the
    prompt-side cost of one child request (USD rounded to 6 places, as the
    saved report has it), pointing at the session's file. Combinations the
    report skipped are rows too, marked ``skipped``."""
    rows = []
    by_name = {s.name: s for s in getattr(result, "sessions", ())}
    for r in result.rows:
        file = getattr(by_name.get(r.session), "file", None)
        rows.append(_score_row(r.session, r.variant, r.dialect, r.lost, r.cost.per_child if r.cost else None, file,
                               bool(r.cache_preserving), r.cause, r.cause_detail, r.pointer))
    for k in getattr(result, "skipped", ()):
        rows.append(_skipped_row(k.session, k.variant, k.dialect, getattr(by_name.get(k.session), "file", None),
                                 k.reason))
    return rows


def rows_from_report_json(doc: dict[str, Any], *, path: str | Path | None = None) -> list[Row]:
    """Rows from a saved report (``fidelity report`` writes
    ``reports/fidelity-report.json``, schema ``fidelity.report/1``): the
    same rows :func:`rows_from_score` gives for the run that wrote it."""
    def bad(problem: str, pointer: str) -> InputError:
        return InputError(problem, path=path, pointer=pointer)

    files: dict[str, str] = {}
    sessions = doc.get("sessions", [])
    if isinstance(sessions, list):
        for s in sessions:
            if isinstance(s, dict) and isinstance(s.get("name"), str) and isinstance(s.get("file"), str):
                files[s["name"]] = s["file"]
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
        lost = tokens.get("lost") if isinstance(tokens, dict) else None
        if isinstance(lost, bool) or not isinstance(lost, (int, float)):
            raise bad("a row needs a numeric tokens.lost", ptr + "/tokens/lost")
        usd = cost.get("usd_per_child") if isinstance(cost, dict) else None
        if usd is not None and (isinstance(usd, bool) or not isinstance(usd, (int, float))):
            raise bad("cost.usd_per_child must be a number", ptr + "/cost/usd_per_child")
        if not isinstance(div, dict):
            raise bad("divergence must be an object", ptr + "/divergence")
        text = {k: div.get(k) if isinstance(div.get(k), str) else None for k in ("cause", "cause_detail", "pointer")}
        session, variant, dialect = (str(x) for x in names)
        rows.append(_score_row(session, variant, dialect, _as_float(lost, "tokens.lost"),
                               None if usd is None else _as_float(usd, "usd_per_child"), files.get(session),
                               r.get("cache_preserving") is True, text["cause"], text["cause_detail"], text["pointer"]))
    for i, k in enumerate(skipped_in):
        names = [k.get(x) if isinstance(k, dict) else None for x in ("session", "variant", "provider")]
        if not all(isinstance(x, str) and x for x in names):
            raise bad("a skipped entry needs session, variant and provider strings", f"/skipped/{i}")
        reason = k.get("reason") if isinstance(k.get("reason"), str) else ""
        session, variant, provider = (str(x) for x in names)  # strings: checked just above
        rows.append(_skipped_row(session, variant, provider, files.get(session), reason))
    if not rows:
        raise bad("the report holds no rows", "/rows")
    seen: set[str] = set()
    for r in rows:
        if r.key in seen:
            raise InputError(f"two rows for {r.key!r}; the gate needs one per session, variant and provider", path=path)
        seen.add(r.key)
    return rows


def _line_of(path: Path, body: bytes, offset: int | None, is_snapshot: bool) -> int:
    """1-based line in the file holding body byte ``offset``."""
    head = 1 if is_snapshot else 0
    if offset is None:
        return head + 1
    return head + 1 + body[:offset].count(b"\n")


def rows_from_snapshots(folder: str | Path, *, prices: Any = None, relative_to: str | Path | None = None,
                        model: str | None = None, skipped_out: list[Any] | None = None) -> list[Row]:
    """Diff each child request of a snapshot folder against the earlier
    request its cache reads from (:func:`fidelity.diff.by_cache.pairs_by_cache`); one row per child, keyed by
    its file name, pointing at the child file and the line of its first
    divergent byte. A pair fidelity cannot compare (an embeddings call, an
    unsupported API) is counted in ``skipped_out``, never fatal."""
    from .diff.by_cache import pairs_by_cache
    from .diff.folder import Skipped, compare_pair, summary
    from .diff.views import annotation

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
        rows.append(Row(
            key=child.path.name,
            variant=child.path.name,
            lost_tokens=float(res.cache.lost),
            usd_per_fork=res.cost.usd_lost if res.cost else None,
            fixture=str(shown),
            line=_line_of(child.path, child.body, res.raw.first_divergent_byte, child.meta is not None),
            detail=f"{detail}; parent {parent.path.name} ({pair.how})",
        ))
    if skipped_out is not None:
        skipped_out.extend(skipped)
    if not rows:
        note = summary(skipped)
        raise InputError("no (parent, child) pair of requests in this folder" + (f"; {note}" if note else ""),
                         path=folder)
    return rows


# -- baselines --------------------------------------------------------------------


def baseline_bytes(rows: Sequence[Row], *, source: str) -> bytes:
    """The baseline file: schema, where the rows came from, the rows."""
    doc = {"schema": BASELINE_SCHEMA, "source": source, "rows": [r.to_json() for r in rows]}
    try:
        return orjson.dumps(doc, option=orjson.OPT_INDENT_2) + b"\n"
    except TypeError:  # a lone surrogate (a "\ud800" escape in a report): escape it, lose nothing
        import json

        return json.dumps(doc, indent=2, ensure_ascii=True).encode("ascii") + b"\n"


def write_baseline(path: str | Path, rows: Sequence[Row], *, source: str) -> None:
    atomic_write(path, baseline_bytes(rows, source=source))


def load_baseline(path: str | Path) -> list[Row]:
    """Rows of a baseline written by :func:`write_baseline`, or of a saved
    report JSON result. A missing file raises :class:`InputError` that says
    how to create one."""
    p = Path(path)
    if not p.exists():
        raise InputError("no baseline; create it with `fidelity gate --update-baseline`", path=p)
    doc = load(p)
    if isinstance(doc, dict) and doc.get("schema") == BASELINE_SCHEMA:
        rows = doc.get("rows")
        if not isinstance(rows, list):
            raise InputError("baseline rows must be a list", path=p, pointer="/rows")
        out = []
        for i, r in enumerate(rows):
            try:
                skipped = r.get("skipped")
                out.append(Row(key=str(r["key"]), variant=str(r["variant"]), lost_tokens=float(r["lost_tokens"]),
                               usd_per_fork=None if r.get("usd_per_fork") is None else float(r["usd_per_fork"]),
                               fixture=r.get("fixture"), line=r.get("line"), detail=r.get("detail"),
                               skipped=None if skipped is None else str(skipped)))
            except (KeyError, TypeError, ValueError, AttributeError, OverflowError):
                raise InputError("baseline row needs key, variant and a numeric lost_tokens", path=p,
                                 pointer=f"/rows/{i}") from None
        return out
    return rows_from_report(doc, path=p)


# -- output: the text, GitHub and JUnit views live in fidelity.gate_output -------------

from .gate_output import format_github, format_text, junit_xml  # noqa: E402  (re-exported views)
