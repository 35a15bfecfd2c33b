"""``fidelity scan PATH...``: what cache misses cost across request logs."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from .. import formats, pricing
from ._args import positive_int
from ._console import stdout_console
from .import_snapshots import add_decompress_arguments, decompress_limits

__all__ = ["HELP", "add_arguments", "run"]

HELP = ("Scan request logs (JSONL request logs, .gz, snapshot folders, HAR, cassettes, DeepSeek Harness logs): "
        "predicted cache hits, and the tokens and dollars lost to broken prefixes by cause, place, model and day.")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("paths", nargs="+", metavar="PATH", help="request log files or folders")
    add_decompress_arguments(parser)
    parser.add_argument("--json", action="store_true",
                        help="print the fidelity.scan/1 JSON document (as diff, replay and tokens-check do)")
    # "json" stays a choice of --format only as a deprecated spelling of --json
    parser.add_argument("--format", choices=("md", "html", "github", "json"), metavar="{md,html,github}",
                        help="print this view instead of the terminal summary (for JSON: --json)")
    parser.add_argument("--out", metavar="DIR",
                        help="write scan.json, scan.md, scan.html and the example pairs (examples/) here")
    parser.add_argument("--executor", choices=("local", "dask"), default="local",
                        help="local: a process pool over this machine's cores (default); dask: Dask")
    parser.add_argument("--workers", type=positive_int, metavar="N", help="worker processes (default: all cores)")
    parser.add_argument("--dask-address", metavar="ADDR",
                        help="a dask.distributed scheduler (default: Dask's local process scheduler)")
    parser.add_argument("--top", type=positive_int, default=20, metavar="N", help="top changes to list (default 20)")
    parser.add_argument("--prices", metavar="FILE",
                        help="LiteLLM model_prices_and_context_window.json instead of the bundled table")


class _Bar:
    """A rich progress bar on stderr (only when stderr is a terminal); a
    :class:`fidelity.scan.Progress` by its methods."""

    def __init__(self) -> None:
        from rich.console import Console
        from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn

        self.console = Console(stderr=True)
        self.live = self.console.is_terminal
        self.progress = Progress(TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(),
                                 TimeElapsedColumn(), console=self.console, transient=True)
        self.task: Any = None
        if self.live:
            self.progress.start()

    def start(self, phase: str, total: int) -> None:
        if not self.live:
            return
        if self.task is not None:
            self.progress.remove_task(self.task)
        self.task = self.progress.add_task(phase, total=total)

    def advance(self) -> None:
        if self.live and self.task is not None:
            self.progress.advance(self.task)

    def stop(self) -> None:
        if self.live:
            self.progress.stop()


def run(args: argparse.Namespace) -> int:
    from ..errors import InputError
    from ..jsonio import atomic_write
    from ..scan import scan, views

    if args.format == "json":
        print("fidelity scan: --format json is deprecated; use --json", file=sys.stderr)
    elif args.json and args.format:
        raise InputError(f"--json and --format {args.format}: choose one view")
    prices = pricing.load(args.prices) if args.prices else None
    bar = _Bar()
    try:
        with decompress_limits(args):  # a .gz input is read within fidelity.gzipped's limits
            result = scan(args.paths, executor=args.executor, workers=args.workers, address=args.dask_address,
                          prices=prices, top=args.top, examples_dir=args.out, progress=bar)
    finally:
        bar.stop()
    if args.out:
        out = Path(args.out)
        atomic_write(out / "scan.json", formats.json_doc(result))
        atomic_write(out / "scan.md", views.markdown(result).encode("utf-8"))
        atomic_write(out / "scan.html", views.html_page(result).encode("utf-8"))
    text = {"md": views.markdown, "html": views.html_page, "github": views.github}.get(args.format)
    if args.json or args.format == "json":
        sys.stdout.buffer.write(formats.json_doc(result))
    elif text is not None:
        sys.stdout.write(text(result))
    else:
        stdout_console().print(views.console_view(result))
    return 0
