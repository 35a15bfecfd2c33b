"""The Markdown view of the report (GitHub-flavoured tables)."""

from __future__ import annotations

from typing import Any

from .. import formats
from . import _fmt

__all__ = ["render_markdown"]


def _headline(data: dict[str, Any], session: str) -> list[str]:
    providers = [p["provider"] for p in data["providers"]]
    rows = {(r["variant"], r["provider"]): r for r in data["rows"] if r["session"] == session}
    out = ["| variant | cache-preserving | " + " | ".join(providers) + " |",
           "|---|---|" + "---:|" * len(providers)]
    for v in data["variants"]:
        cells = []
        for p in providers:
            r = rows.get((v["name"], p))
            if r is None:
                cells.append("skipped")
                continue
            lost = r["tokens"]["lost"]
            mark = "" if r["meets_expectation"] else " ⚠"
            cells.append(f"{formats.count(lost)}{mark}")
        out.append(f"| {v['name']} | {'yes' if v['cache_preserving'] else 'no'} | " + " | ".join(cells) + " |")
    return out


def _session_table(data: dict[str, Any], session: str) -> list[str]:
    out = ["| variant | provider | inherited | reused | lost | first divergence | region | cause | "
           "$ / child | $ / 1,000 forks | vs spawn / 1,000 | fixes, in cache order (tokens kept if fixed) |",
           "|---|---|---:|---:|---:|---|---|---|---:|---:|---:|---|"]
    for r in data["rows"]:
        if r["session"] != session:
            continue
        t, c = r["tokens"], r["cost"] or {}
        est = " (est.)" if r["tokens_estimated"] else ""
        out.append(
            f"| {r['variant']} | {r['provider']}{est} | {formats.count(t['inherited'])} | {formats.count(t['reused'])} | "
            f"{formats.count(t['lost'])} | {_fmt.where(r)} | {r['divergence']['region'] or '–'} | "
            f"{r['divergence']['cause']} | {formats.usd(c.get('usd_per_child'), 5)} | {formats.usd(c.get('usd_per_1000'), 2)} | "
            f"{formats.usd(c.get('savings_vs_spawn_per_1000'), 2)} | "
            f"{formats.md_cell('; '.join(f'{n}. {x}' for n, x in enumerate(_fmt.fixes(r), 1)) or '–')} |")
    return out


def _harness(data: dict[str, Any]) -> list[str]:
    """Real harnesses' own forks (recorded parent and child bodies), beside the reference variants."""
    out = ["## Real harnesses", "",
           "Fork children recorded from the harnesses themselves through `fidelity proxy` "
           "(`fixtures/harness/`), each compared with its parent as sent to every provider that speaks its "
           "wire format. *lost*: tokens a child whose prefix matched would read that this one does not.", "",
           "| harness | version | provider | first divergence | cause | predicted cached | lost | "
           "child prompt | $ lost / 1,000 forks |",
           "|---|---|---|---|---|---:|---:|---:|---:|"]
    for h in data["harness"]:
        est = " (est.)" if h["estimated"] else ""
        usd = h["usd_lost_per_fork"]
        out.append(f"| {formats.md_cell(h['harness'])} | {formats.md_cell(h['version'])} | {formats.md_cell(h['provider'])}{est} | "
                   f"{formats.md_cell(h['first_divergence'])} | {formats.md_cell(h['cause'])} | {formats.count(h['predicted_cached'])} | "
                   f"{formats.count(h['lost_tokens'])} | {formats.count(h['child_prompt'])} | "
                   f"{formats.usd(None if usd is None else usd * 1000, 2)} |")
    return out + [""]


def render_markdown(data: dict[str, Any]) -> str:
    """The whole report as Markdown."""
    s = data["summary"]
    lines = [
        "# Prompt-cache fidelity report",
        "",
        f"Fixtures: {data['fixtures']}. Prices: {data['prices']['table']} (as of {data['prices']['as_of']}); "
        "each row's price source and date are in the JSON report. Costs are prompt-side only (output tokens "
        "are the same across variants).",
        "",
        f"- {s['rows']} scored combinations (session × variant × provider), {s['skipped']} skipped.",
        f"- Declared cache-preserving variants that lose tokens: **{s['cache_preserving_rows_losing_tokens']}**.",
        f"- Combinations missing their expected outcome: **{s['rows_missing_expectation']}**"
        + (": " + ", ".join(s["missing"]) if s["missing"] else "") + ".",
        "",
        "## Where the figures come from",
        "",
    ]
    lines += [f"- {line}" for line in _fmt.provenance(data)]
    lines += [
        "",
        "Definitions: *inherited* = child prompt tokens up to the end of the copied history; *reused* = tokens "
        "the cache model predicts the child reads from the parent's cache; *lost* = tokens a faithful child of "
        "the baseline composition reads that this one does not; *vs spawn* = spawn's cost minus this one "
        "(negative: the inherited context costs more than a bare directive).",
        "",
    ]
    for sess in data["sessions"]:
        lines += [f"## {sess['name']}: {sess['title']}", "", sess["description"], "",
                  f"{sess['messages']} messages, {sess['tools']} tools, {sess['system_sections']} system sections. "
                  f"Directive: “{formats.md_cell(sess['directive'])}”", "",
                  "Lost tokens per variant and provider (⚠: outcome differs from the variant's declared expectation):",
                  ""]
        lines += _headline(data, sess["name"])
        lines += ["", "<details><summary>All figures</summary>", ""]
        lines += _session_table(data, sess["name"])
        lines += ["", "</details>", ""]
    if data.get("harness"):
        lines += _harness(data)
    lines += ["## Variants", ""]
    for v in data["variants"]:
        lines += [f"### {v['name']}: {v['title']}", "",
                  f"Builder `{v['builder']}`; deltas: {', '.join(f'`{d}`' for d in v['deltas']) or 'none'}; "
                  f"cache-preserving: {'yes' if v['cache_preserving'] else 'no'}; expected: {v['expect_meaning']}"
                  + (f" (cause `{v['cause']}`)" if v["cause"] else "") + ".", "",
                  formats.md_cell(v["summary"]), "",
                  f"**Token effect.** {formats.md_cell(v['token_effect'])}", "",
                  f"**KV cache effect.** {formats.md_cell(v['kv_cache_effect'])}", ""]
    if data["skipped"]:
        lines += ["## Skipped", ""]
        lines += [f"- {k['session']} / {k['variant']} / {k['provider']}: {formats.md_cell(k['reason'])}" for k in data["skipped"]]
        lines.append("")
    return "\n".join(lines).rstrip("\n") + "\n"
