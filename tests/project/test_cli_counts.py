"""Every option that takes a count refuses 0, negatives and words with one
usage line and exit code 2, before the command does any work."""

from __future__ import annotations

import subprocess
import sys

import pytest

CASES = [
    ["report", "--jobs"],
    ["scan", "fixtures", "--workers"],
    ["scan", "fixtures", "--top"],
    ["import", "in", "out", "--max-gzip-ratio"],
    ["proxy", "--max-connections"],
    ["probe", "http://127.0.0.1:9", "--cases"],
    ["harness", "matrix", "--no-run", "--releases"],
]


@pytest.mark.parametrize("argv", CASES, ids=lambda a: " ".join(a[:1] + a[-1:]))
@pytest.mark.parametrize("bad", ["0", "-3", "many"])
def test_count_options_refuse_what_is_not_a_positive_whole_number(argv: list[str], bad: str) -> None:
    run = subprocess.run([sys.executable, "-m", "fidelity", *argv, bad], capture_output=True, text=True, timeout=60)
    assert run.returncode == 2, run.stderr
    last = run.stderr.strip().splitlines()[-1]
    assert f"expected a whole number, 1 or more, got '{bad}'" in last
    assert "Traceback" not in run.stderr
