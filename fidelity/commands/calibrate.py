"""``fidelity calibrate PATH``: predicted DeepSeek prompt and cached tokens
against the usage DeepSeek reported in recorded DSH session logs."""

from __future__ import annotations

import argparse
import sys

import orjson
from rich.console import Group, RenderableType
from rich.table import Table
from rich.text import Text

from .. import tokens, wire
from ..calibrate import Calibration, SessionResult, calibrate, load
from ._console import stdout_console

__all__ = ["HELP", "add_arguments", "load", "run", "render"]

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
        sys.stdout.buffer.write(orjson.dumps(result.to_json(), option=orjson.OPT_INDENT_2) + b"\n")
        return 0
    stdout_console().print(render(result))
    return 0


def _session_table(session: SessionResult) -> Table:
    table = Table(title=f"{session.name}  ({session.skipped} request(s) without a DeepSeek cache report skipped)"
                  if session.skipped else session.name, title_justify="left")
    for column in ("turn/step", "prompt real", "pred", "err", "cached real", "pred", "err", "output real", "pred"):
        table.add_column(column, justify="right")
    for s in session.steps:
        err = Text(f"{s.cached_error:+d}", style="red" if s.cached_error > 0 else ("yellow" if s.cached_error else "green"))
        table.add_row(f"{s.turn}/{s.step}", str(s.real_prompt), str(s.predicted_prompt),
                      "anchor" if s.anchor else f"{s.prompt_error:+d}",
                      str(s.real_cached), str(s.predicted_cached), err,
                      "" if s.real_output is None else str(s.real_output), str(s.predicted_output))
    return table


def render(result: Calibration) -> Group:
    """Rich view: a table per session with calibrated steps, then the summary."""
    parts: list[RenderableType] = [_session_table(s) for s in result.sessions if s.steps]
    sm = result.summary
    lines = [
        f"tokenizer {result.tokenizer}, cache model {result.cache_model} (unit {sm.unit} tokens)",
        f"requests with a DeepSeek cache report: {sm.steps} "
        f"({sm.steps - sm.prompt_steps} header anchors)",
        f"prompt tokens, |predicted - real| over {sm.prompt_steps} non-anchor requests: "
        f"median {sm.prompt_error_median:g}, p95 {sm.prompt_error_p95:g}",
    ]
    if sm.absolute_error_median is not None:
        lines.append(f"prompt tokens with today's sidecar header, no anchor ({sm.absolute_steps} requests): "
                     f"median |error| {sm.absolute_error_median:g}")
    lines += [
        f"cached tokens: exact {sm.cached_exact:.1%} (non-anchor requests {sm.cached_exact_continuing:.1%}), "
        f"within one unit {sm.cached_within_unit:.1%}; "
        f"over-predicted {sm.over_predicted}, under-predicted {sm.under_predicted}",
    ]
    if sm.output_error_median is not None:
        lines.append(f"output tokens: median |error| {sm.output_error_median:g}")
    parts.append(Text("\n".join(lines)))
    return Group(*parts)
