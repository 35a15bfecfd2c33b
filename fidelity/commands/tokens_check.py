"""``fidelity tokens-check PATH...``: predicted prompt tokens against the
prompt each provider billed, over recorded traffic (see docs/tokens-billed.md)."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from pathlib import Path

from .. import formats
from ..errors import InputError
from ..tokens_check import CheckResult, check
from ..views.tokens_check import render
from ._console import stdout_console

__all__ = ["HELP", "add_arguments", "run", "nothing_scored"]

HELP = ("Compare fidelity's prompt-token counts with the usage providers billed in recorded traffic "
        "(cassettes, HAR, claude-trace JSONL, snapshot folders): median and p95 relative error per "
        "provider and kind of request.")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("paths", nargs="+", help="files or folders of recorded traffic (searched recursively)")
    parser.add_argument("--json", action="store_true", help="print the groups, skipped counts and every request as JSON")
    parser.add_argument("--requests", action="store_true", help="also list every request (console output)")


def _files(path: Path) -> list[Path]:
    try:
        return [path] if path.is_file() else sorted(p for p in path.rglob("*") if p.is_file())
    except OSError as exc:  # a folder that cannot be listed
        raise InputError(f"cannot read: {exc.strerror or exc}", path=path) from None


def nothing_scored(paths: Sequence[str], result: CheckResult) -> InputError:
    """The one-line error for a check that scored no request: what was read and why
    none could be scored (a file replay refuses raises replay's own error)."""
    where = ", ".join(str(p) for p in paths)
    if result.skipped:
        n = sum(result.skipped.values())
        why = "; ".join(f"{k} ({v})" for k, v in sorted(result.skipped.items(), key=lambda kv: (-kv[1], kv[0])))
        return InputError(f"read {n} recorded request(s) with billed usage, none could be scored: {why}", path=where)
    from ..replay import read_recordings

    files = 0
    for p in paths:
        files += len(_files(Path(p)))
        read_recordings(p)  # raises the error replay gives for the same input
    return InputError(f"no recorded request with billed prompt usage in {files} file(s) (tokens-check reads "
                      "vcrpy and Ruby VCR cassettes, HAR, Go httprr traces, claude-trace JSONL and snapshot folders)", path=where)


def run(args: argparse.Namespace) -> int:
    result = check(args.paths)
    if not result.rows:
        raise nothing_scored(args.paths, result)
    if args.json:
        sys.stdout.buffer.write(formats.json_doc(result.to_json()))
        return 0
    stdout_console().print(render(result, requests=args.requests))
    return 0
