"""``fidelity tokens-check PATH...``: predicted prompt tokens against the
prompt each provider billed, over recorded traffic (see docs/tokens-billed.md)."""

from __future__ import annotations

import argparse
import sys

import orjson
from rich.table import Table

from ..tokens.check import check
from ._console import stdout_console
from .replay import set_apart_table

__all__ = ["HELP", "add_arguments", "run"]

HELP = ("Compare fidelity's prompt-token counts with the usage providers billed in recorded traffic "
        "(cassettes, HAR, claude-trace JSONL, snapshot folders): median and p95 relative error per "
        "provider and kind of request.")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("paths", nargs="+", help="files or folders of recorded traffic (searched recursively)")
    parser.add_argument("--json", action="store_true", help="print the groups, skipped counts and every request as JSON")
    parser.add_argument("--requests", action="store_true", help="also list every request (console output)")


def run(args: argparse.Namespace) -> int:
    result = check(args.paths)
    if args.json:
        sys.stdout.buffer.write(orjson.dumps(result.to_json(), option=orjson.OPT_INDENT_2) + b"\n")
        return 0
    console = stdout_console()
    table = Table(title="prompt tokens: |predicted - billed| / billed", title_justify="left")
    for col in ("provider", "kind", "requests", "median", "p95", "estimate"):
        table.add_column(col, justify="left" if col in ("provider", "kind") else "right")
    for g in result.groups:
        table.add_row(g.provider, g.kind, str(g.n), f"{g.median:.2%}", f"{g.p95:.2%}", "estimated" if g.estimated else "")
    if result.groups:
        console.print(table)
    else:
        console.print("no request with a reported prompt was scored (see what was set apart below)")
    if args.requests:
        rows = Table(title="requests")
        for col in ("provider", "kind", "model", "billed", "predicted", "error", "where"):
            rows.add_column(col)
        for r in result.rows:
            rows.add_row(r.provider, r.kind, r.model, str(r.billed), str(r.predicted), f"{r.error:.2%}",
                         f"{r.path}#{r.where}")
        console.print(rows)
    if result.apart:
        console.print(set_apart_table(result.apart))
    for reason, n in sorted(result.skipped.items()):
        if not any(reason in by for by in result.apart.values()):
            console.print(f"not countable {n}: {reason}")
    return 0
