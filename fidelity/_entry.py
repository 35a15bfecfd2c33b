"""The process entry point of ``fidelity``: run the command, then leave. Commands
in :data:`FAST_EXIT` end with ``os._exit`` after flushing and running ``atexit``
handlers, skipping interpreter teardown (docs/speed.md)."""

from __future__ import annotations

import atexit
import os
import sys
from typing import NoReturn

from .cli import chosen_command, main

__all__ = ["FAST_EXIT", "run"]

#: commands whose only outputs are stdout and stderr (no files, no child processes)
FAST_EXIT = frozenset({"diff"})


def run() -> NoReturn:
    """Run the command named in ``sys.argv`` and exit with its status."""
    code = main()
    if chosen_command(sys.argv[1:]) not in FAST_EXIT or os.environ.get("FIDELITY_SLOW_EXIT"):
        sys.exit(code)
    atexit._run_exitfuncs()  # what a normal exit runs (none are registered on this path today)
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (OSError, ValueError):  # a closed pipe (already reported by main) or a closed stream
            code = code or 0
    os._exit(code)
