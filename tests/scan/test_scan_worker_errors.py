"""An error raised in a scan worker reaches the command (it used to hang)."""

from __future__ import annotations

import subprocess
import sys

_SCRIPT = """
from fidelity.errors import UnknownName
from fidelity.scan.executors import LocalExecutor

def fail(i):
    raise UnknownName("model (no tokenizer)", f"m{i}", ["gpt-*"])

try:
    LocalExecutor(workers=2).map(fail, [(i,) for i in range(4)])
except UnknownName as err:
    print("raised:", err)
"""


def test_a_worker_error_with_several_arguments_reaches_the_caller() -> None:
    # before, the pool's result thread failed to rebuild the error (its constructor
    # takes three arguments) and the map waited for ever
    run = subprocess.run([sys.executable, "-c", _SCRIPT], capture_output=True, text=True, timeout=120)
    assert run.returncode == 0, run.stderr
    assert run.stdout.startswith("raised: unknown model (no tokenizer) 'm")
