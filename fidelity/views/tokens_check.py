"""Console view of a :class:`fidelity.tokens_check.CheckResult` (its JSON
view is :meth:`~fidelity.tokens_check.CheckResult.to_json`): error per
provider and kind, optionally every request, and what was set apart."""

from __future__ import annotations

from rich.console import Group, RenderableType
from rich.table import Table

from .. import formats
from ..tokens_check import CheckResult
from .replay import set_apart_table

__all__ = ["render"]


def render(result: CheckResult, *, requests: bool = False) -> Group:
    """The groups' table; with ``requests``, every request; then the
    set-apart table and the requests that could not be counted."""
    parts: list[RenderableType] = []
    table = Table(title="prompt tokens: |predicted - billed| / billed", title_justify="left")
    for col in ("provider", "kind", "requests", "median", "p95", "estimate"):
        table.add_column(col, justify="left" if col in ("provider", "kind") else "right")
    for g in result.groups:
        table.add_row(g.provider, g.kind, str(g.n), formats.percent(g.median, 2), formats.percent(g.p95, 2), "estimated" if g.estimated else "")
    parts.append(table)
    if requests:
        rows = Table(title="requests")
        for col in ("provider", "kind", "model", "billed", "predicted", "error", "where"):
            rows.add_column(col)
        for r in result.rows:
            rows.add_row(r.provider, r.kind, r.model, str(r.billed), str(r.predicted), formats.percent(r.error, 2),
                         f"{r.path}#{r.where}")
        parts.append(rows)
    if result.apart:
        parts.append(set_apart_table(result.apart))
    for reason, n in sorted(result.skipped.items()):
        if not any(reason in by for by in result.apart.values()):
            parts.append(f"not countable {n}: {reason}")
    return Group(*parts)
