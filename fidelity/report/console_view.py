"""The console view: a rich table of lost tokens per variant and provider."""

from __future__ import annotations

from typing import Any

from rich.console import Group
from rich.table import Table
from rich.text import Text

from .. import formats
from . import _fmt

__all__ = ["console_table"]


def console_table(data: dict[str, Any]) -> Group:
    """One table per session (lost tokens, red where a cache-preserving
    variant loses any), then the provenance lines."""
    providers = [p["provider"] for p in data["providers"]]
    parts: list[Any] = []
    for sess in data["sessions"]:
        table = Table(title=f"{sess['name']}: lost cached tokens per child", title_justify="left")
        table.add_column("variant", no_wrap=True)
        table.add_column("keeps?", justify="center")
        for p in providers:
            table.add_column(p, justify="right")
        rows = {(r["variant"], r["provider"]): r for r in data["rows"] if r["session"] == sess["name"]}
        for v in data["variants"]:
            cells: list[Text] = []
            for p in providers:
                r = rows.get((v["name"], p))
                if r is None:
                    cells.append(Text("skip", style="dim"))
                    continue
                lost = r["tokens"]["lost"]
                style = "green" if lost == 0 else ("bold red" if v["cache_preserving"] else "yellow")
                cells.append(Text(formats.count(lost) + ("" if r["meets_expectation"] else " ⚠"), style=style))
            table.add_row(v["name"], "yes" if v["cache_preserving"] else "no", *cells)
        parts.append(table)
    s = data["summary"]
    parts.append(Text(f"cache-preserving rows losing tokens: {s['cache_preserving_rows_losing_tokens']}; "
                      f"rows missing expectation: {s['rows_missing_expectation']}; skipped: {s['skipped']}"))
    parts.append(Text(f"prices: {data['prices']['table']} (as of {data['prices']['as_of']})", style="dim"))
    parts += [Text(line, style="dim") for line in _fmt.provenance(data)]
    return Group(*parts)
