"""The ``fidelity`` command line: parse arguments, run one command, print.

Each command lives in a module of ``fidelity/commands/`` and exposes
``HELP`` (one line), ``add_arguments(parser)`` and ``run(args) -> int``.
Errors raised on purpose (:class:`~fidelity.errors.FidelityError`) become one
line on stderr and exit code 2; ``--debug`` shows the traceback instead.
"""

from __future__ import annotations

import argparse
import importlib
import sys
import traceback
from typing import Sequence

from .errors import FidelityError

__all__ = ["COMMANDS", "build_parser", "main"]

#: command name -> module in fidelity/commands
COMMANDS = {"report": "report", "diff": "diff", "render": "render", "fork": "fork", "gate": "gate",
            "import": "import_snapshots", "calibrate": "calibrate", "tokens-check": "tokens_check",
            "proxy": "proxy", "upstream": "upstream", "replay": "replay",
            "scan": "scan", "probe": "probe"}


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="fidelity",
        description="Prove that forked subagents keep the parent's prompt-cache prefix; "
        "when they do not, say where and what it costs.",
    )
    parser.add_argument("--debug", action="store_true", help="show tracebacks on errors")
    from . import __version__

    parser.add_argument("--version", action="version", version=f"fidelity {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    for name, module_name in COMMANDS.items():
        module = importlib.import_module(f".commands.{module_name}", __package__)
        cmd = sub.add_parser(name, help=module.HELP, description=module.HELP)
        cmd.add_argument("--debug", action="store_true", default=argparse.SUPPRESS,
                         help="show tracebacks on errors")
        module.add_arguments(cmd)
        cmd.set_defaults(_run=module.run)
    return parser




def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    if not getattr(args, "_run", None):
        parser.print_help()
        return 2
    try:
        return int(args._run(args) or 0)
    except FidelityError as exc:
        if getattr(args, "debug", False):
            traceback.print_exc()
        print(f"fidelity {args.command}: error: {exc}", file=sys.stderr)
        return 2
    except OSError as exc:  # an output path that cannot be written (a file where a folder goes, a full disk)
        if getattr(args, "debug", False):
            traceback.print_exc()
        where = f"{exc.filename}: " if exc.filename else ""
        print(f"fidelity {args.command}: error: {where}{exc.strerror or exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("fidelity: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:
        return 0


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
