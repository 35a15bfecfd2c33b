"""The committed baseline is what `fidelity gate` (no arguments) compares the
bundled report against: a change that makes any variant lose more cached
tokens fails here, as it would in a user's CI."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from fidelity.cli import main

REPO = Path(__file__).resolve().parents[2]


def test_bundled_report_passes_the_committed_gate(capsys: pytest.CaptureFixture[str]) -> None:
    baseline = REPO / "reports" / "baseline.json"
    assert baseline.is_file(), "reports/baseline.json is committed; regenerate with `fidelity gate --update-baseline`"
    before = baseline.read_bytes()
    cwd = os.getcwd()
    os.chdir(REPO)  # the gate reads [tool.fidelity.gate] from ./pyproject.toml
    try:
        code = main(["gate", "--format", "text"])
    finally:
        os.chdir(cwd)
    out = capsys.readouterr().out
    assert code == 0, out[-2000:]
    assert "passed" in out and "0 failure(s)" in out
    assert baseline.read_bytes() == before
