"""``fidelity gate``: fail CI when forks lose more cached tokens than the baseline."""

from __future__ import annotations

import argparse
import os
import shlex
import sys
from pathlib import Path

from .. import formats, gate, gate_output, pricing
from ..errors import InputError
from ..jsonio import atomic_write, load
from . import report

__all__ = ["HELP", "add_arguments", "run"]

HELP = ("Compare lost cached tokens and cost per fork against a baseline: exit 1 on a regression "
        "or when a cache-preserving variant loses tokens, 2 on bad input.")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--baseline", metavar="FILE",
                        help="baseline JSON (default: [tool.fidelity.gate] baseline, else reports/baseline.json)")
    parser.add_argument("--update-baseline", action="store_true",
                        help="write the current figures as the new baseline and exit 0 (the way to drop a "
                        "row on purpose: a baseline row that is missing or skipped now fails the gate)")
    parser.add_argument("--format", choices=("text", "github"), default=None,
                        help="text, or GitHub workflow commands (default: github when GITHUB_ACTIONS=true)")
    parser.add_argument("--json", action="store_true",
                        help="print the verdict and every row as JSON (fidelity.gate/1), as diff, replay and scan do")
    parser.add_argument("--junit", metavar="FILE", help="also write a JUnit XML report")
    parser.add_argument("--verbose", "-v", action="store_true",
                        help="list every row (default: the failures and a one-line summary)")
    source = parser.add_mutually_exclusive_group()
    source.add_argument("--snapshots", metavar="DIR",
                        help="gate a snapshot folder: each child request diffed against its parent")
    source.add_argument("--report", metavar="FILE",
                        help="gate a saved report: the fidelity-report.json that `fidelity report` writes "
                        "(reports/fidelity-report.json by default)")
    parser.add_argument("--model", help="with --snapshots: model for tokenizer and prices (default: from each "
                        "body, else its snapshot metadata, else its URL)")
    parser.add_argument("--config", metavar="FILE", default="pyproject.toml",
                        help="pyproject.toml holding [tool.fidelity.gate] (default: ./pyproject.toml)")
    # Without --snapshots or --report the gate runs the report in-process.
    report.add_input_arguments(parser)


def _current(args: argparse.Namespace) -> tuple[list[gate.Row], str]:
    if args.snapshots:
        from ..pairs.folder import Skipped, summary

        prices = pricing.load(args.prices) if args.prices else None
        skipped: list[Skipped] = []
        rows = gate.rows_from_snapshots(args.snapshots, prices=prices, relative_to=Path.cwd(),
                                        model=args.model, skipped_out=skipped)
        note = summary(skipped)
        if note:  # stderr: stdout carries the verdict (and GitHub workflow commands)
            print(f"fidelity gate: {note}", file=sys.stderr)
        return rows, f"snapshots:{args.snapshots}"
    if args.report:
        return gate.rows_from_report(load(args.report), path=args.report), f"report:{args.report}"
    return gate.rows_from_score(report.build_score(args)), "report"  # the report, run in-process


#: the options that choose what is gated and against what, as the user spelled them
_REPEATED = (("snapshots", "--snapshots"), ("report", "--report"), ("model", "--model"), ("fixtures", "--fixtures"),
             ("providers", "--providers"), ("variants", "--variants"), ("prices", "--prices"),
             ("baseline", "--baseline"))


def update_command(args: argparse.Namespace) -> str:
    """The command that writes the baseline for the run ``args`` describes:
    the user's own choice of inputs, with ``--update-baseline``."""
    words = ["fidelity", "gate"]
    for attr, flag in _REPEATED:
        value = getattr(args, attr, None)
        if value:
            words += [flag, *(value if isinstance(value, list) else [value])]
    if getattr(args, "config", "pyproject.toml") != "pyproject.toml":
        words += ["--config", args.config]
    return shlex.join([*words, "--update-baseline"])


def run(args: argparse.Namespace) -> int:
    if args.json and args.format:
        raise InputError(f"--json and --format {args.format}: choose one view")
    th = gate.load_config(args.config)
    baseline_path = args.baseline or th.baseline
    rows, source = _current(args)
    if args.update_baseline:
        gate.write_baseline(baseline_path, rows, source=source)
        print(f"fidelity gate: wrote baseline {baseline_path} ({len(rows)} row(s))")
        return 0
    baseline = gate.load_baseline(baseline_path, create_with=update_command(args))  # missing: exit 2
    if not (args.snapshots or args.report):  # a narrowed report run expects only its own rows
        baseline = gate.narrow_baseline(baseline, variants=args.variants, dialects=args.providers)
    result = gate.evaluate(rows, baseline, th)
    result.baseline_path = str(baseline_path)
    if args.json:
        sys.stdout.buffer.write(formats.json_doc(result.to_json()))
    else:
        fmt = args.format or ("github" if os.environ.get("GITHUB_ACTIONS") == "true" else "text")
        view = gate_output.format_github if fmt == "github" else gate_output.format_text
        text = view(result, verbose=args.verbose)
        sys.stdout.write(formats.printable(text))
    if args.junit:
        atomic_write(args.junit, gate_output.junit_xml(result))
    return result.exit_code
