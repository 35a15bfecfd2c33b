"""``fidelity replay PATH``: recorded traffic through the cache simulator,
predicted against reported prompt, read and written tokens."""

from __future__ import annotations

import argparse
import sys

from .. import formats
from ..replay import replay
from ..views.replay import render
from ._console import stdout_console

__all__ = ["HELP", "add_arguments", "run"]

HELP = ("Replay recorded traffic (vcrpy cassettes, HAR, claude-trace JSONL, snapshot folders with usage, "
        "DeepSeek Harness logs) through each provider's cache simulator: predicted vs reported tokens.")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("path", help="a recording, or a folder searched recursively")
    parser.add_argument("--json", action="store_true", help="print the documented JSON (docs/replay.md)")


def run(args: argparse.Namespace) -> int:
    result = replay(args.path)
    if args.json:
        sys.stdout.buffer.write(formats.json_doc(result.to_json()))
        return 0
    stdout_console().print(render(result))
    return 0
