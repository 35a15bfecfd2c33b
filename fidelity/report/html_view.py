"""The HTML view: one self-contained page (inline CSS and SVG, no scripts, no
external resources) that opens offline; what it shows: docs/report.md."""

from __future__ import annotations

import re
from html import escape
from typing import Any

from .. import formats
from . import _fmt

__all__ = ["COLORS", "CSS", "render_html"]

WIDTH, LABEL, BAR, STRIP, GAP, AXIS = 640, 150, 14, 5, 12, 22
COLORS = {"params": "#9e9e9e", "tools": "#5c6bc0", "system": "#8e24aa", "history": "#00897b",
          "reused": "#43a047", "lost": "#e53935", "rest": "#cfd8dc"}
CSS = """
body{font:14px/1.45 system-ui,-apple-system,"Segoe UI",Roboto,"Noto Sans CJK SC",sans-serif;margin:2rem auto;max-width:1100px;color:#1b1b1b;padding:0 1rem}
h1{font-size:1.6rem}h2{margin-top:2.2rem;border-bottom:1px solid #ddd}h3{margin-bottom:.2rem}
table{border-collapse:collapse;margin:.6rem 0;font-size:12px}td,th{border:1px solid #ddd;padding:2px 6px;text-align:right}
td:first-child,th:first-child{text-align:left}td.t,th.t{text-align:left;white-space:nowrap}.ok{color:#2e7d32}.bad{color:#c62828;font-weight:600}
.legend span{display:inline-block;margin-right:1rem}.sw{display:inline-block;width:.9em;height:.9em;vertical-align:-1px;margin-right:.3em}
.variant{margin:1rem 0 1.6rem}.fixes{margin:0;padding-left:1.2em;text-align:left;white-space:normal}.effects p{margin:.2rem 0}.meta{color:#555}svg text{font-size:11px;font-family:inherit}
"""


def _swatch(name: str, label: str) -> str:
    return f'<span><i class="sw" style="background:{COLORS[name]}"></i>{escape(label)}</span>'


def _bar(y: int, row: dict[str, Any] | None, provider: str, scale: float) -> str:
    parts = [f'<text x="0" y="{y + BAR - 2}">{escape(provider)}</text>']
    if row is None:
        parts.append(f'<text x="{LABEL}" y="{y + BAR - 2}" fill="#777">skipped (see report)</text>')
        return "".join(parts)
    t = row["tokens"]
    x = float(LABEL)
    for name, count in row["regions"].items():
        w = count * scale
        if w > 0:
            parts.append(f'<rect x="{x:.2f}" y="{y}" width="{w:.2f}" height="{STRIP}" fill="{COLORS[name]}">'
                         f'<title>{name}: {count:,} tokens</title></rect>')
        x += w
    top = y + STRIP + 1
    reused, lost = t["reused"], min(t["lost"], max(0, t["child_prompt"] - t["reused"]))
    rest = max(0, t["child_prompt"] - reused - lost)
    x = float(LABEL)
    for name, count in (("reused", reused), ("lost", lost), ("rest", rest)):
        w = count * scale
        if w > 0:
            parts.append(f'<rect x="{x:.2f}" y="{top}" width="{w:.2f}" height="{BAR - STRIP}" fill="{COLORS[name]}">'
                         f'<title>{name}: {count:,} tokens</title></rect>')
        x += w
    d = row["divergence"]
    if d["first_divergent_byte"] is not None:
        mx = LABEL + t["common_prefix"] * scale
        where = _fmt.where(row)
        if d["region"] and not where.endswith(f"({d['region']})"):  # a name may already say its region
            where += f" ({d['region']})"
        parts.append(f'<line x1="{mx:.2f}" y1="{y - 2}" x2="{mx:.2f}" y2="{y + BAR + 2}" stroke="#111" stroke-width="1.5">'
                     f'<title>first divergence: {escape(where)}, '
                     f'after {t["common_prefix"]:,} tokens; cause {escape(d["cause"])}</title></line>')
    end = LABEL + t["child_prompt"] * scale
    label = f"lost {t['lost']:,} · {d['region'] or 'identical'}"
    if reused == 0 and lost > 0 and t["common_prefix"] > 0:
        # the whole bar red though the marker sits further right: say why on the bar
        label += f" · shares {t['common_prefix']:,}, reads none"
    parts.append(f'<text x="{end + 6:.2f}" y="{y + BAR - 2}" fill="#333">{escape(label)}</text>')
    return "".join(parts)


def _variant_svg(data: dict[str, Any], session: str, variant: str) -> str:
    providers = [p["provider"] for p in data["providers"]]
    rows = {r["provider"]: r for r in data["rows"] if r["session"] == session and r["variant"] == variant}
    biggest = max((r["tokens"]["child_prompt"] for r in data["rows"] if r["session"] == session), default=1) or 1
    scale = (WIDTH - LABEL - 10) / biggest * 0.78
    top = len(providers) * (BAR + GAP) + 4
    height = top + AXIS
    bars = "".join(_bar(4 + i * (BAR + GAP), rows.get(p), p, scale) for i, p in enumerate(providers))
    title = f"{variant} on {session}: reused and lost prefix per provider"
    return (f'<svg xmlns="http://www.w3.org/2000/svg" role="img" width="{WIDTH + 160}" height="{height}" '
            f'viewBox="0 0 {WIDTH + 160} {height}"><title>{escape(title)}</title>{bars}'
            f"{_axis(top, biggest, scale)}</svg>")


def _axis(y: int, biggest: int, scale: float) -> str:
    """The token scale under a variant's bars: five ticks up to the longest child prompt."""
    parts = [f'<g class="axis"><line x1="{LABEL}" y1="{y}" x2="{LABEL + biggest * scale:.2f}" y2="{y}" '
             'stroke="#777" stroke-width="1"/>']
    for k in range(5):
        value = biggest * k // 4
        x = LABEL + value * scale
        parts.append(f'<line x1="{x:.2f}" y1="{y}" x2="{x:.2f}" y2="{y + 4}" stroke="#777" stroke-width="1"/>'
                     f'<text x="{x:.2f}" y="{y + 15}" text-anchor="middle" fill="#555">{value:,}</text>')
    parts.append(f'<text x="0" y="{y + 15}" fill="#555">tokens</text></g>')
    return "".join(parts)


_CODE = re.compile(r"`([^`]+)`")


def _inline(text: str) -> str:
    """Escaped text with Markdown inline code (`` `x` ``) set as ``<code>``."""
    return _CODE.sub(lambda m: f"<code>{m.group(1)}</code>", escape(text))


def _table(data: dict[str, Any], session: str) -> str:
    head = ('<tr><th class="t">variant</th><th class="t">provider</th><th>inherited</th><th>reused</th><th>lost</th>'
            '<th class="t">first divergence</th><th class="t">cause</th><th>$ / child</th><th>$ / 1,000</th>'
            '<th>vs spawn / 1,000</th><th class="t">fixes, in cache order (tokens kept if fixed)</th></tr>')
    body = []
    for r in data["rows"]:
        if r["session"] != session:
            continue
        t, c = r["tokens"], r["cost"] or {}
        cls = "ok" if r["meets_expectation"] else "bad"
        est = " (est.)" if r["tokens_estimated"] else ""
        body.append(
            f"<tr class=\"{cls}\"><td class=\"t\">{escape(r['variant'])}</td><td class=\"t\">{escape(r['provider'] + est)}</td>"
            f"<td>{t['inherited']:,}</td><td>{t['reused']:,}</td><td>{t['lost']:,}</td>"
            f"<td class=\"t\">{escape(_fmt.where(r))}</td><td class=\"t\">{escape(r['divergence']['cause'])}</td>"
            f"<td>{escape(formats.usd(c.get('usd_per_child'), 5))}</td><td>{escape(formats.usd(c.get('usd_per_1000'), 2))}</td>"
            f"<td>{escape(formats.usd(c.get('savings_vs_spawn_per_1000'), 2))}</td><td class=\"t\">{_fixes(r)}</td></tr>")
    return f"<details><summary>All figures</summary><table>{head}{''.join(body)}</table></details>"


def _fixes(row: dict[str, Any]) -> str:
    """A row's fix list (:func:`fidelity.report._fmt.fixes`) as an ordered list; ``–`` without a break."""
    items = _fmt.fixes(row)
    if not items:
        return "–"
    return '<ol class="fixes">' + "".join(f"<li>{escape(x)}</li>" for x in items) + "</ol>"


def _harness(data: dict[str, Any]) -> str:
    """Real harnesses' own forks, beside the reference variants (same figures as the Markdown view)."""
    head = ('<tr><th class="t">harness</th><th class="t">version</th><th class="t">provider</th>'
            '<th class="t">first divergence</th><th class="t">cause</th>'
            "<th>predicted cached</th><th>lost</th><th>child prompt</th><th>$ lost / 1,000 forks</th></tr>")
    body = []
    for h in data["harness"]:
        usd = h["usd_lost_per_fork"]
        est = " (est.)" if h["estimated"] else ""
        body.append(f"<tr><td class=\"t\">{escape(h['harness'])}</td><td class=\"t\">{escape(h['version'])}</td>"
                    f"<td class=\"t\">{escape(h['provider'] + est)}</td>"
                    f"<td class=\"t\">{escape(h['first_divergence'])}</td>"
                    f"<td class=\"t\">{escape(h['cause'])}</td><td>{escape(formats.count(h['predicted_cached']))}</td>"
                    f"<td>{escape(formats.count(h['lost_tokens']))}</td><td>{escape(formats.count(h['child_prompt']))}</td>"
                    f"<td>{escape(formats.usd(None if usd is None else usd * 1000, 2))}</td></tr>")
    return ('<h2 id="harness">Real harnesses</h2><p>Fork children recorded from the harnesses themselves through '
            "<code>fidelity proxy</code> (<code>fixtures/harness/</code>), each compared with its parent as "
            "sent to every provider that speaks its wire format.</p>"
            f"<table>{head}{''.join(body)}</table>")


def render_html(data: dict[str, Any]) -> str:
    """The whole report as one HTML document."""
    s = data["summary"]
    variants = {v["name"]: v for v in data["variants"]}
    out = ['<!DOCTYPE html><html lang="en"><head><meta charset="utf-8">',
           '<meta name="viewport" content="width=device-width,initial-scale=1">',
           "<title>Prompt-cache fidelity report</title>", f"<style>{CSS}</style></head><body>",
           "<h1>Prompt-cache fidelity report</h1>",
           f'<p class="meta">Fixtures: {escape(data["fixtures"])}. Prices: {escape(data["prices"]["table"])} '
           f'(as of {escape(data["prices"]["as_of"])}). Costs are prompt-side only.</p>',
           f"<p>{s['rows']} combinations, {s['skipped']} skipped. Declared cache-preserving variants losing tokens: "
           f"<b>{s['cache_preserving_rows_losing_tokens']}</b>. Missing their expected outcome: "
           f"<b>{s['rows_missing_expectation']}</b>.</p>",
           "<ul class=\"meta\">" + "".join(f"<li>{escape(x)}</li>" for x in _fmt.provenance(data)) + "</ul>",
           _contents(data), _summary_table(data),
           '<p class="legend">' + "".join(_swatch(k, k) for k in COLORS) + " <span>│ first divergence</span></p>",
           '<p class="meta">Bars are drawn to the scale under them (tokens of the child\'s prompt, the session\'s '
           "longest child spanning the axis). Red is what a faithful child reads from the cache and this one does "
           "not. A marker to the right of where the red starts: the child shares the prefix up to the marker but "
           "reads none of it, because the shared part ends before any cache entry it can read (a breakpoint the "
           "child reaches, the provider's minimum cacheable length); the bar's label says so.</p>"]
    for sess in data["sessions"]:
        out.append(f'<h2 id="{_anchor(sess["name"])}">{escape(sess["name"])}: {escape(sess["title"])}</h2>'
                   f"<p>{_inline(sess['description'])}</p>")
        for name, v in variants.items():
            out.append(f'<div class="variant"><h3>{escape(v["title"])}</h3>'
                       f'<p class="meta">{escape(name)} · builder {escape(v["builder"])} · '
                       f'cache-preserving: {"yes" if v["cache_preserving"] else "no"}</p>'
                       f"{_variant_svg(data, sess['name'], name)}</div>")
        out.append(_table(data, sess["name"]))
    if data.get("harness"):
        out.append(_harness(data))
    out.append('<h2 id="variants">Variants</h2>')
    for v in data["variants"]:
        out.append(f'<div class="effects"><h3>{escape(v["title"])}</h3><p>{_inline(v["summary"])}</p>'
                   f"<p><b>Token effect.</b> {_inline(v['token_effect'])}</p>"
                   f"<p><b>KV cache effect.</b> {_inline(v['kv_cache_effect'])}</p></div>")
    if data["skipped"]:
        out.append('<h2 id="skipped">Skipped</h2><ul>' + "".join(
            f"<li>{escape(k['session'])} / {escape(k['variant'])} / {escape(k['provider'])}: {escape(k['reason'])}</li>"
            for k in data["skipped"]) + "</ul>")
    out.append("</body></html>")
    return "\n".join(out) + "\n"


def _anchor(name: str) -> str:
    return "session-" + re.sub(r"[^a-z0-9-]+", "-", name.lower())


def _contents(data: dict[str, Any]) -> str:
    """Links to each section of the page."""
    items = [(f"#{_anchor(s['name'])}", f"{s['name']}: {s['title']}") for s in data["sessions"]]
    if data.get("harness"):
        items.append(("#harness", "Real harnesses"))
    items.append(("#variants", "Variants"))
    if data["skipped"]:
        items.append(("#skipped", "Skipped"))
    return ('<nav><h2>Contents</h2><ol>' + "".join(f'<li><a href="{href}">{escape(text)}</a></li>'
                                                  for href, text in items) + "</ol></nav>")


def _summary_table(data: dict[str, Any]) -> str:
    """One row per session (:func:`fidelity.report._fmt.session_summary`)."""
    head = ('<tr><th class="t">session</th><th>combinations</th><th>rows losing tokens</th>'
            "<th>cache-preserving rows losing tokens</th><th>missing expectation</th><th>lost tokens</th></tr>")
    body = []
    for s in _fmt.session_summary(data):
        body.append(f'<tr><td class="t"><a href="#{_anchor(s["session"])}">{escape(s["session"])}</a></td>'
                    f"<td>{s['rows']:,}</td><td>{s['losing']:,}</td><td>{s['preserving_losing']:,}</td>"
                    f"<td>{s['missing']:,}</td><td>{s['lost']:,}</td></tr>")
    return f"<h2>Summary</h2><table>{head}{''.join(body)}</table>"
