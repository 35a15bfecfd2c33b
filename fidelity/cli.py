"""The ``fidelity`` command line: parse arguments, run one command, print.

Each command is a module of ``fidelity/commands/`` with ``HELP``,
``add_arguments(parser)`` and ``run(args) -> int``, imported only when chosen.
A :class:`~fidelity.errors.FidelityError` is one line on stderr and exit 2."""

from __future__ import annotations

import argparse
import importlib
import os
import sys
import traceback
from collections.abc import Sequence
from typing import NamedTuple

from .errors import FidelityError

__all__ = ["COMMANDS", "Command", "build_parser", "chosen_command", "main"]


class Command(NamedTuple):
    """Where a command lives and the one line ``fidelity --help`` shows."""

    module: str
    summary: str


#: command name -> module in fidelity/commands and its summary for ``--help``
COMMANDS: dict[str, Command] = {
    "report": Command("report", "score fixtures for every variant and provider; write md/json/html reports"),
    "diff": Command("diff", "why did a child request miss the cache: first divergent byte, cause, lost tokens, cost"),
    "render": Command("render", "write the exact body a provider SDK would send for a canonical request"),
    "fork": Command("fork", "make a composition variant's child request from a captured parent body"),
    "gate": Command("gate", "fail CI when lost cached tokens or cost per fork regress against a baseline"),
    "import": Command("import_snapshots", "import HAR, vcrpy cassettes, JSONL logs, DeepSeek Harness logs as snapshots"),
    "calibrate": Command("calibrate", "replay DeepSeek Harness logs: predicted against real cached tokens"),
    "tokens-check": Command("tokens_check", "compare fidelity's prompt-token counts with the usage providers billed"),
    "proxy": Command("proxy", "recording reverse proxy: forward requests, write snapshots, judge each against its parent"),
    "upstream": Command("upstream", "scripted fake provider answering with usage from fidelity's cache models"),
    "replay": Command("replay", "replay recorded traffic through each provider's cache simulator: predicted vs reported"),
    "scan": Command("scan", "what cache misses cost across a log of production traffic, by cause, place, model and day"),
    "probe": Command("probe", "send a parent and a child to a live endpoint: reported cached tokens against fidelity's"),
    "harness": Command("harness", "real agent harnesses release by release: run, matrix, bisect of subagent cache breaks"),
}

def build_parser(command: str | None = "*") -> argparse.ArgumentParser:
    """The argument parser with ``command``'s arguments (``"*"``: every command's;
    ``None``: none, enough for ``--help`` and ``--version``)."""
    parser = argparse.ArgumentParser(
        prog="fidelity",
        description="Prove that forked subagents keep the parent's prompt-cache prefix; "
        "when they do not, say where and what it costs.",
    )
    parser.add_argument("--debug", action="store_true", help="show tracebacks on errors")
    from . import __version__

    parser.add_argument("--version", action="version", version=f"fidelity {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    for name, entry in COMMANDS.items():
        if command != "*" and name != command:
            sub.add_parser(name, help=entry.summary, add_help=False)  # listed, not imported
            continue
        module = importlib.import_module(f".commands.{entry.module}", __package__)
        cmd = sub.add_parser(name, help=entry.summary, description=module.HELP)
        cmd.add_argument("--debug", action="store_true", default=argparse.SUPPRESS,
                         help="show tracebacks on errors")
        module.add_arguments(cmd)
        cmd.set_defaults(_run=module.run)
    return parser


def chosen_command(argv: Sequence[str]) -> str | None:
    """The command named on the command line (the first word not an option), or ``None``."""
    for word in argv:
        if word.startswith("-"):  # the global options take no value
            continue
        return word if word in COMMANDS else None
    return None


def main(argv: Sequence[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    parser = build_parser(chosen_command(argv))
    args = parser.parse_args(argv)
    if not getattr(args, "_run", None):
        parser.print_help()
        return 2
    try:
        code = int(args._run(args) or 0)
        sys.stdout.flush()  # a closed pipe shows here, not at interpreter exit
        return code
    except BrokenPipeError:  # the reader stopped early (| head): not an error
        _silence_stdout()
        return 0
    # an OSError: an output path that cannot be written (a file where a folder goes, a full disk)
    except (FidelityError, OSError) as exc:
        if getattr(args, "debug", False):
            traceback.print_exc()
        text = str(exc) if isinstance(exc, FidelityError) else (
            f"{exc.filename}: " if exc.filename else "") + str(exc.strerror or exc)
        print(f"fidelity {args.command}: error: {text}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("fidelity: interrupted", file=sys.stderr)
        return 130


def _silence_stdout() -> None:
    """Point stdout at /dev/null so that the final flush does not fail again
    (Python's ``signal`` documentation, "Note on SIGPIPE")."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        os.close(devnull)
    except (OSError, ValueError, AttributeError):  # stdout is not a real file (a test's capture)
        pass


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
