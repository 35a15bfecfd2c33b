"""``fidelity calibrate PATH``: predicted DeepSeek prompt and cached tokens
against the usage DeepSeek reported in recorded DSH session logs."""

from __future__ import annotations

import argparse
import sys

from .. import formats, tokens, wire
from ..calibrate import calibrate, load
from ..views.calibration import render
from ._console import stdout_console

__all__ = ["HELP", "add_arguments", "load", "run"]

HELP = ("Replay DeepSeek Harness session logs under PATH: predicted prompt and cached tokens "
        "per request against the real DeepSeek usage, with summary figures.")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("path", help="folder holding session*.jsonl logs (searched recursively)")
    parser.add_argument("--model", default="deepseek-v4-flash", help="model for the tokenizer (default: %(default)s)")
    parser.add_argument("--json", action="store_true", help="print the per-step figures and summary as JSON")
    parser.add_argument("--header-shift", type=int, default=0, metavar="N",
                        help="add N tokens to every fitted header length (sensitivity of the figures to the fit)")


def run(args: argparse.Namespace) -> int:
    tokenizer = tokens.for_model(args.model, "deepseek")
    result = calibrate(load(args.path), tokenizer, wire.get("deepseek").render, header_shift=args.header_shift)
    if args.json:
        sys.stdout.buffer.write(formats.json_doc(result.to_json()))
        return 0
    stdout_console().print(render(result))
    return 0
