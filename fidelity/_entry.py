"""The process entry point of ``fidelity`` (``python -m fidelity`` and the
``fidelity`` console script): run the command, then leave.

Leaving normally tears the interpreter down: every object still alive is
freed one by one. After a ``fidelity diff`` of megabytes that is the
tokenizer's vocabulary (tiktoken's encoder and decoder tables, 200,000
entries each, and the Python dict it was built from), the token memos and
every module: CPU time spent on memory the operating system takes back at
once anyway (``docs/speed.md`` gives the figure).

So for the commands listed in :data:`FAST_EXIT`, which write nothing but
standard output and standard error, the process ends with ``os._exit``
after doing what a normal exit does that anyone could see: both streams
are flushed and the ``atexit`` handlers run. Other commands (reports,
snapshots, the proxy, probes with engines to stop) exit normally.
:func:`fidelity.cli.main` itself never exits, so tests keep calling it
in-process.
"""

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
