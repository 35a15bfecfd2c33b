"""Console view of a :class:`fidelity.replay.Replay` (its JSON view is
:meth:`~fidelity.replay.Replay.to_json`): the requests, reported against
predicted, the summary per provider and what was set apart."""

from __future__ import annotations

from rich.console import Group
from rich.table import Table
from rich.text import Text

from .. import formats
from ..replay import Replay

__all__ = ["render", "set_apart_table"]


def _fmt(v: object) -> str:
    return formats.count(v, "-") if v is None or isinstance(v, int) else str(v)


def render(result: Replay) -> Group:
    """Per-request table, then the per-provider summary."""
    table = Table(title="requests (reported / predicted)", title_justify="left")
    for col in ("source", "#", "provider", "model", "prompt", "read", "written", "reads from"):
        table.add_column(col, justify="right" if col in ("#", "prompt", "read", "written") else "left",
                         overflow="fold")
    for r in result.rows:
        p = r.predicted
        src = r.source.rsplit("/", 1)[-1]
        if p is None:
            table.add_row(src, str(r.index), r.provider or "-", r.model or "-", _fmt(r.reported.prompt),
                          _fmt(r.reported.cache_read), _fmt(r.reported.cache_write), Text(r.note or "", style="dim"))
            continue
        read = Text(f"{_fmt(r.reported.cache_read)} / {p.cache_read:,}")
        if r.warm_outside:
            read.append(" warm outside", style="yellow")
        if r.apart:
            read.append(f" {r.apart}", style="yellow")
        table.add_row(src, str(r.index), r.provider or "-", r.model or "-",
                      f"{_fmt(r.reported.prompt)} / {p.prompt:,}", read,
                      f"{_fmt(r.reported.cache_write)} / {_fmt(p.cache_write)}", str(p.parent or "-"))
    summary = Table(title="summary per provider", title_justify="left")
    for col in ("provider", "requests", "scored", "warm outside", "hit/miss right", "read within 5%",
                "within 128", "exact", "same, counts scaled to reported prompt"):
        summary.add_column(col, justify="right")
    shares = ("hit_miss_agree", "read_within_5pct", "read_within_128", "read_exact")
    for prov, s in result.summary.items():
        sc = s.get("scaled_to_reported_prompt") or {}
        summary.add_row(prov + (" (estimated tokens)" if s.get("estimated_tokens") else ""), str(s["requests"]),
                        str(s["scored"]), str(s["warm_outside"]), *(formats.percent(s[k], missing="-") for k in shares),
                        " · ".join(formats.percent(sc.get(k), missing="-") for k in shares))
    return Group(table, summary, set_apart_table({p: s["set_apart"] for p, s in result.summary.items()}))


def set_apart_table(by_provider: dict[str, dict[str, int]]) -> Table:
    """Requests left out of the figures, per provider and reason (the one
    rule, :mod:`fidelity.traffic.apart`); ``tokens-check`` prints the same table."""
    table = Table(title="set apart (not in the figures above), by reason", title_justify="left")
    for col in ("provider", "reason", "requests"):
        table.add_column(col, justify="right" if col == "requests" else "left", overflow="fold")
    for prov, reasons in by_provider.items():
        for reason, n in reasons.items():
            table.add_row(prov, reason, str(n))
    return table
