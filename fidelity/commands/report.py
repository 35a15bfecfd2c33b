"""``fidelity report``: score every session × variant × provider and write
the Markdown, JSON and HTML reports (views of one result object)."""

from __future__ import annotations

import argparse
import time
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path

from rich.console import Console
from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

from .. import compose, fixtures, pricing, score
from ..report import console_table, to_json, write
from ._args import positive_int
from ._console import stdout_console

__all__ = ["HELP", "add_arguments", "add_input_arguments", "build_score", "run"]

HELP = ("Score the bundled (or given) fixtures for every composition variant and provider: inherited, "
        "reused and lost cached tokens, first divergent byte, cost; writes fidelity-report.{md,json,html}.")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    add_input_arguments(parser)
    parser.add_argument("--out", default="reports", metavar="DIR", help="output folder (default: ./reports)")
    parser.add_argument("--quiet", action="store_true", help="print only the paths written")
    parser.add_argument("--harness", metavar="DIR",
                        help="real-harness fork snapshots to add as rows (default with the bundled fixtures: the "
                             "source checkout's fixtures/harness when present; 'none' to leave them out)")


def add_input_arguments(parser: argparse.ArgumentParser) -> None:
    """The options that choose what is scored (shared with ``fidelity gate``)."""
    parser.add_argument("--fixtures", metavar="DIR",
                        help="fixtures folder with sessions.toml (default: the bundled fixtures)")
    parser.add_argument("--providers", nargs="+", metavar="P", help="only these wire dialects")
    parser.add_argument("--variants", nargs="+", metavar="V", help="only these variants")
    parser.add_argument("--prices", metavar="FILE",
                        help="LiteLLM model_prices_and_context_window.json instead of the bundled table")
    parser.add_argument("--jobs", type=positive_int, default=None, metavar="N",
                        help="processes that score rows (default: one per available core; 1: serial); "
                             "the result is the same for any N")


def build_score(args: argparse.Namespace, progress: Callable[[str], None] | None = None) -> score.Score:
    """Score what the input options choose: the one result object every
    report view (and the gate) reads."""
    fx = fixtures.load(args.fixtures)
    variants = compose.load_variants_from_bytes(fx.compositions)
    if args.variants:
        by_name = {v.name: v for v in variants}
        missing = [n for n in args.variants if n not in by_name]
        if missing:
            from ..errors import UnknownName

            raise UnknownName("variant", missing[0], list(by_name))
        variants = tuple(by_name[n] for n in args.variants)
    prices = pricing.load(args.prices) if args.prices else pricing.load()
    jobs = getattr(args, "jobs", None)
    if progress is None:
        return score.score(fx, variants, providers=args.providers, prices=prices, jobs=jobs)
    console = Console(stderr=True)
    with Progress(TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(), TimeElapsedColumn(),
                  console=console, transient=True, disable=not console.is_terminal) as bar:
        task = bar.add_task("scoring", total=score.row_count(fx, variants, args.providers))

        def step(label: str) -> None:
            progress(label)
            bar.update(task, advance=1, description=label)

        return score.score(fx, variants, providers=args.providers, prices=prices, progress=step, jobs=jobs)


def run(args: argparse.Namespace) -> int:
    started = time.monotonic()
    result = build_score(args, progress=(lambda label: None) if not args.quiet else None)
    # the committed harness forks (their default folder, when it exists) go with the bundled
    # fixtures; a --fixtures folder gets them only when asked (--harness DIR)
    from ..proxy.harness_rows import DEFAULT_FOLDER, harness_rows

    folder = args.harness if args.harness or not args.fixtures else "none"
    if folder is None and DEFAULT_FOLDER.is_dir():
        folder = str(DEFAULT_FOLDER)
    if folder not in (None, "none"):
        result = replace(result, harness=tuple(harness_rows(Path(folder))))
    console = Console(stderr=True)
    paths = write(result, args.out)
    elapsed = time.monotonic() - started
    if not args.quiet:
        stdout_console().print(console_table(to_json(result)))
        console.print(f"scored {len(result.rows)} combinations in {elapsed:.1f} s")
    for path in paths:
        print(path)
    return 0
