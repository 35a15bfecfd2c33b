"""Views of one scan result (the ``fidelity.scan/1`` dict): console, Markdown,
HTML, GitHub annotations. Each renders the same document; none computes."""

from __future__ import annotations

import html
from typing import Any

from rich.console import Group
from rich.table import Table
from rich.text import Text

from .. import formats

__all__ = ["console_view", "markdown", "html_page", "github"]


#: what an unknown figure (no price, no rate) prints as in every scan view
_NA = "n/a"


def _usd(x: float | None) -> str:
    return formats.usd(x, missing=_NA)


def _pct(x: float | None) -> str:
    return formats.percent(x, missing=_NA)


def _headline(r: dict[str, Any]) -> list[str]:
    t = r["totals"]
    lines = [
        f"{t['requests']:,} requests ({t['bytes'] / 1e6:,.1f} MB) in {t['partitions']:,} cache partitions; "
        f"{t['bad_lines']:,} bad line(s)",
        f"predicted cache hit rate {_pct(t['predicted_hit_rate'])}: {t['read_tokens']:,} of "
        f"{t['prompt_tokens']:,} prompt tokens read from cache",
        f"lost to broken prefixes: {t['lost_tokens']:,} tokens, {_usd(t['lost_usd'])} in {t['breaks']:,} request(s)",
    ]
    failed = r.get("failed_requests") or {}
    if failed.get("total"):
        lines.append(f"{failed['total']:,} failed request(s) not simulated (HTTP "
                     + ", ".join(f"{k} ×{v:,}" for k, v in failed["by_status"].items()) + ")")
    rep = r.get("reported")
    if rep:
        lines.append(f"where usage was logged ({rep['requests']:,} requests): predicted hit rate "
                     f"{_pct(rep['predicted_hit_rate'])}, reported {_pct(rep['reported_hit_rate'])}")
        apart = rep.get("set_apart") or []
        if apart:
            lines.append(f"set apart: {sum(a['requests'] for a in apart):,} request(s) whose billed prompt holds what "
                         "the log does not (" + ", ".join(f"{a['reason']} {a['requests']:,}" for a in apart) + ")")
    return lines


def _rows(r: dict[str, Any]) -> list[tuple[str, list[str], list[list[str]]]]:
    """(title, header, rows) of each table, shared by every view."""
    out = []
    # first: the request's first break (its loss is charged there); behind: a break after another one
    out.append(("Lost by cause", ["cause", "change", "first", "behind", "lost tokens", "lost $"],
                [[c["cause"], c["change"], f"{c['first']:,}", f"{c['behind']:,}", f"{c['lost_tokens']:,}",
                  _usd(c["lost_usd"])] for c in r["by_cause"]]))
    out.append(("Where the prefix broke", ["segment", "pointer", "tool / section", "first", "behind", "lost tokens",
                                           "lost $"],
                [[w["kind"], w["pointer"], w["label"], f"{w['first']:,}", f"{w['behind']:,}",
                  f"{w['lost_tokens']:,}", _usd(w["lost_usd"])] for w in r["by_where"]]))
    out.append(("By model", ["provider", "model", "requests", "prompt tokens", "hit rate (predicted)",
                             "hit rate (reported)", "lost tokens", "lost $"],
                [[m["provider"], m["model"] + (" (estimated tokens)" if m["estimated"] else ""),
                  f"{m['requests']:,}", f"{m['prompt_tokens']:,}", _pct(m["predicted_hit_rate"]),
                  _reported_rate(m["reported"]),
                  f"{m['lost_tokens']:,}", _usd(m["lost_usd"])] for m in r["by_model"]]))
    out.append(("By day", ["day", "requests", "prompt tokens", "read", "lost tokens", "lost $"],
                [[d["day"], f"{d['requests']:,}", f"{d['prompt_tokens']:,}", f"{d['read_tokens']:,}",
                  f"{d['lost_tokens']:,}", _usd(d["lost_usd"])] for d in r["by_day"]]))
    out.append(("Top offending changes", ["#", "change", "where", "breaks", "lost tokens", "lost $", "example pair"],
                [[str(c["rank"]), f"{c['cause']}: {c['change']}", f"{c['pointer']} {c['label']}".strip(),
                  f"{c['breaks']:,}", f"{c['lost_tokens']:,}", _usd(c["lost_usd"]), _example(c["example"])]
                 for c in r["top_changes"]]))
    bad = r["bad_lines"]
    if bad["total"]:
        out.append(("Bad lines (counted, not scanned)", ["reason", "lines"],
                    [[k, f"{v:,}"] for k, v in bad["by_reason"].items()]))
    return out


def _reported_rate(rep: dict[str, Any] | None) -> str:
    if rep is None:
        return "not logged"
    if not rep["requests"] and rep.get("set_apart"):
        return "set apart"  # every request with usage holds server-side input
    return _pct(rep["reported_hit_rate"])


def _example(ex: dict[str, Any]) -> str:
    files = ex.get("files")
    if files:
        return f"fidelity diff {files['parent']} {files['child']}"
    return f"{ex['parent']} → {ex['child']}"


def console_view(r: dict[str, Any], *, limit: int = 10) -> Group:
    """A rich renderable: the headline and each table (at most ``limit`` rows)."""
    parts: list[Any] = [Text(line, style="bold" if i == 2 else "") for i, line in enumerate(_headline(r))]
    for title, header, rows in _rows(r):
        if not rows:
            continue
        table = Table(title=title, title_justify="left", show_lines=False)
        for h in header:
            table.add_column(h, overflow="fold")
        for row in rows[:limit]:
            table.add_row(*row)
        parts.append(table)
    for note in r["notes"]:
        parts.append(Text(f"note: {note}", style="yellow"))
    return Group(*parts)


def markdown(r: dict[str, Any]) -> str:
    out = ["# fidelity scan", ""]
    out += [f"- {line}" for line in _headline(r)]
    for title, header, rows in _rows(r):
        out += ["", f"## {title}", ""]
        if not rows:
            out.append("(none)")
            continue
        out.append("| " + " | ".join(header) + " |")
        out.append("|" + "---|" * len(header))
        out += ["| " + " | ".join(formats.md_cell(c) for c in row) + " |" for row in rows]
    if r["top_changes"]:
        out += ["", "## Example of each change", ""]
        for c in r["top_changes"]:
            ex = c["example"]
            out.append(f"{c['rank']}. {ex['detail'] or c['change']} ({ex['provider']}/{ex['model']}, "
                       f"{ex['lost_tokens']:,} tokens lost): parent `{ex['parent']}`, child `{ex['child']}`")
    for note in r["notes"]:
        out += ["", f"> note: {note}"]
    return "\n".join(out) + "\n"


def html_page(r: dict[str, Any]) -> str:
    e = html.escape
    out = ["<!doctype html><html><head><meta charset='utf-8'><title>fidelity scan</title>",
           "<style>body{font-family:sans-serif;margin:2em}table{border-collapse:collapse;margin:1em 0}"
           "td,th{border:1px solid #ccc;padding:.3em .6em;text-align:left}th{background:#f4f4f4}</style>",
           "</head><body><h1>fidelity scan</h1><ul>"]
    out += [f"<li>{e(line)}</li>" for line in _headline(r)]
    out.append("</ul>")
    for title, header, rows in _rows(r):
        out.append(f"<h2>{e(title)}</h2>")
        if not rows:
            out.append("<p>(none)</p>")
            continue
        out.append("<table><tr>" + "".join(f"<th>{e(h)}</th>" for h in header) + "</tr>")
        out += ["<tr>" + "".join(f"<td>{e(c)}</td>" for c in row) + "</tr>" for row in rows]
        out.append("</table>")
    out += [f"<p><em>note: {e(n)}</em></p>" for n in r["notes"]]
    out.append("</body></html>")
    return "\n".join(out) + "\n"


def _gh_props(where: str, title: str) -> str:
    """A workflow command's properties: ``file``, ``line`` (from ``PATH:LINE``) and ``title``."""
    path, _, line = where.rpartition(":")
    props = [f"file={formats.gh_property(path)}"] + ([f"line={line}"] if line.isdigit() else [])
    return ",".join([*props, "title=" + formats.gh_property(title)])


def github(r: dict[str, Any]) -> str:
    """GitHub workflow commands as ``fidelity gate`` writes them: a
    ``::warning`` per top change at its example child's file and line, a
    ``::error`` per bad-line reason, then the Markdown summary."""
    out = []
    for c in r["top_changes"]:
        msg = (f"{c['change'] or c['cause']} at {c['pointer']} {c['label']}".strip()
               + f": {c['lost_tokens']:,} tokens lost in {c['breaks']:,} request(s) ({_usd(c['lost_usd'])})")
        props = _gh_props(c["example"]["child"], "fidelity scan: " + c["cause"])
        out.append(f"::warning {props}::{formats.gh_data(msg)}")
    for ex in r["bad_lines"]["examples"][:10]:
        detail = ex["reason"] + (": " + ex["detail"] if ex["detail"] else "")
        out.append(f"::error {_gh_props(ex['where'], 'fidelity scan: bad line')}::{formats.gh_data(detail)}")
    return "\n".join(out) + ("\n" if out else "") + markdown(r)
