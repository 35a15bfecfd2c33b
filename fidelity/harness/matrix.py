"""The harness matrix: harness x release x subagent kind x provider, derived
from the capture folders alone (:mod:`fidelity.harness.capture`), so the
committed ``reports/harness-matrix.json`` is re-derivable from committed
bytes. One result (:func:`build`), three views (:func:`to_json`,
:func:`to_markdown`, :func:`to_html`); ``first_broken_in``: docs/harness.md."""

from __future__ import annotations

import html
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from .. import formats
from ..jsonio import atomic_write
from .capture import Capture, read_captures, read_pair
from .descriptor import Descriptor
from .install import version_key
from .judge import VERDICTS, judge, provider_id, providers_for

__all__ = ["SCHEMA", "build", "build_from", "to_json", "to_markdown", "to_html", "table", "write", "DEFAULT_FIXTURES"]

SCHEMA = "fidelity.harness-matrix/1"
#: the repository's committed captures (a source checkout)
DEFAULT_FIXTURES = Path(__file__).resolve().parents[2] / "fixtures" / "harness-matrix"
_COLUMNS = ("harness", "release", "kind", "provider", "verdict", "segment", "pointer", "cause", "kept_tokens",
            "lost_tokens", "usd_per_1000_spawns", "first_broken_in")


def _rows_of(cap: Capture, wanted: list[str] | None) -> list[dict[str, Any]]:
    base = {"harness": cap.harness, "release": cap.version, "kind": cap.kind}
    if cap.status != "captured":
        return [{**base, "provider": "-", "provider_id": "-", "verdict": "not run", "note": cap.reason}]
    parent, child = read_pair(cap)
    rows = []
    for sc in providers_for(cap.family, wanted):
        f = judge(parent, child, sc, parent_path=str(cap.parent), child_path=str(cap.child))
        rows.append({**base, "provider": f.provider, "provider_id": provider_id(sc), "verdict": f.verdict,
                     "segment": f.segment, "pointer": f.pointer, "cause": f.cause, "cause_detail": f.cause_detail,
                     "kept_tokens": f.kept_tokens, "lost_tokens": f.lost_tokens, "child_prompt": f.child_prompt,
                     "tokens_estimated": f.estimated, "usd_per_1000_spawns": f.usd_per_1000})
    return rows


def _first_broken(rows: list[dict[str, Any]]) -> None:
    """Fill ``first_broken_in`` / ``first_broken_exact`` on broken rows."""
    series: dict[tuple[str, str, str], list[dict[str, Any]]] = {}
    for r in rows:
        if r["verdict"] in VERDICTS:
            series.setdefault((r["harness"], r["kind"], r["provider_id"]), []).append(r)
    for runs in series.values():
        runs.sort(key=lambda r: version_key(r["release"]))
        for i, r in enumerate(runs):
            if r["verdict"] != "broken":
                continue
            j = i
            while j > 0 and runs[j - 1]["verdict"] == "broken" and \
                    (runs[j - 1]["cause"], runs[j - 1]["pointer"]) == (r["cause"], r["pointer"]):
                j -= 1
            r["first_broken_in"], r["first_broken_exact"] = runs[j]["release"], j > 0


def build(root: Path = DEFAULT_FIXTURES, descriptors: Iterable[Descriptor] = (), *,
          providers: list[str] | None = None) -> dict[str, Any]:
    """The matrix of every capture under ``root``, plus a row per descriptor
    that cannot be run here (with the reason)."""
    return build_from(read_captures(root), descriptors, providers=providers)


def build_from(captures: Iterable[Capture], descriptors: Iterable[Descriptor] = (), *,
               providers: list[str] | None = None) -> dict[str, Any]:
    """The matrix of ``captures`` (and of the unsupported ``descriptors``)."""
    rows: list[dict[str, Any]] = []
    for cap in captures:
        rows.extend(_rows_of(cap, providers))
    for d in descriptors:
        if d.unsupported:
            rows.append({"harness": d.name, "release": "-", "kind": "-", "provider": "-", "provider_id": "-",
                         "verdict": "unsupported", "note": d.unsupported})
    rows.sort(key=lambda r: (r["harness"], version_key(r["release"]), r["kind"], r["provider_id"]))
    _first_broken(rows)
    harnesses = sorted({r["harness"] for r in rows})
    return {"schema": SCHEMA, "harnesses": harnesses,
            "releases": {h: sorted({r["release"] for r in rows if r["harness"] == h and r["release"] != "-"},
                                   key=version_key) for h in harnesses},
            "rows": rows}


def to_json(matrix: dict[str, Any]) -> bytes:
    return formats.json_doc(matrix)


def _cell(row: dict[str, Any], col: str) -> str:
    v = row.get(col)
    if col == "first_broken_in" and v is not None:
        return str(v) if row.get("first_broken_exact") else f"<= {v}"
    if col == "cause" and row.get("note"):
        return str(row["note"])
    if col == "cause" and row.get("cause_detail"):
        return f"{v}: {row['cause_detail']}"
    if col in ("kept_tokens", "lost_tokens") and isinstance(v, int):
        return f"{v:,}" + ("~" if row.get("tokens_estimated") else "")
    if col == "usd_per_1000_spawns" and isinstance(v, float):
        return formats.usd(v, 2)
    return "" if v is None else str(v)


def to_markdown(matrix: dict[str, Any]) -> str:
    out = ["# Harness cache-fidelity matrix", "",
           "Each row: a real harness release's subagent child against its parent request, captured through "
           "`fidelity proxy` (`fixtures/harness-matrix/`), as sent to each provider that speaks its wire format. "
           "kept/lost: cached tokens per spawn (~: estimated tokenizer); dollars per 1,000 spawns at list prices.",
           "", table(matrix["rows"])]
    return "\n".join(out)


def table(rows: list[dict[str, Any]]) -> str:
    """The rows as a Markdown table (the console and Markdown view)."""
    out = ["| " + " | ".join(_COLUMNS) + " |", "|" + "---|" * len(_COLUMNS)]
    for r in rows:
        out.append("| " + " | ".join(formats.md_cell(_cell(r, c)) for c in _COLUMNS) + " |")
    return "\n".join(out) + "\n"


def to_html(matrix: dict[str, Any]) -> str:
    head = "".join(f"<th>{html.escape(c)}</th>" for c in _COLUMNS)
    body = "".join("<tr>" + "".join(f"<td>{html.escape(_cell(r, c))}</td>" for c in _COLUMNS) + "</tr>\n"
                   for r in matrix["rows"])
    return ("<!doctype html>\n<html><head><meta charset=\"utf-8\"><title>Harness cache-fidelity matrix</title>"
            "<style>table{border-collapse:collapse}td,th{border:1px solid #ccc;padding:2px 6px;"
            "font:13px monospace}</style></head>\n<body><h1>Harness cache-fidelity matrix</h1>\n"
            f"<table><tr>{head}</tr>\n{body}</table></body></html>\n")


def write(matrix: dict[str, Any], folder: Path) -> list[Path]:
    """``harness-matrix.{json,md,html}`` in ``folder``, each written atomically."""
    paths = [folder / "harness-matrix.json", folder / "harness-matrix.md", folder / "harness-matrix.html"]
    for path, data in zip(paths, (to_json(matrix), to_markdown(matrix).encode(), to_html(matrix).encode())):
        atomic_write(path, data)
    return paths
