"""Bad input on `fidelity report`, `fork` and `calibrate`: exit 2, one line
naming the file and the problem, no traceback, inputs untouched."""

from __future__ import annotations

import hashlib
from pathlib import Path

import pytest

from fidelity.cli import main

REQUEST = Path(__file__).resolve().parents[2] / "fixtures" / "request.example.json"


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str]:
    code = main(list(argv))
    err = capsys.readouterr().err
    return code, err


def one_line_error(err: str, *needles: str) -> None:
    lines = err.strip().splitlines()
    assert len(lines) == 1, err
    assert "Traceback" not in err
    for needle in needles:
        assert needle in lines[0], lines[0]


@pytest.fixture
def parent(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> Path:
    out = tmp_path / "parent.json"
    assert main(["render", "--provider", "deepseek", str(REQUEST)]) == 0
    out.write_bytes(capsys.readouterr().out.encode())
    return out


def digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def test_report_bad_fixtures(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, err = run(capsys, "report", "--fixtures", str(tmp_path / "missing"))
    assert code == 2
    one_line_error(err, str(tmp_path / "missing"))
    bad = tmp_path / "fx"
    bad.mkdir()
    (bad / "sessions.toml").write_text("not toml [")
    before = digest(bad / "sessions.toml")
    code, err = run(capsys, "report", "--fixtures", str(bad), "--out", str(tmp_path / "out"))
    assert code == 2
    one_line_error(err, str(bad / "sessions.toml"), "not valid TOML")
    assert digest(bad / "sessions.toml") == before
    assert not (tmp_path / "out").exists()


@pytest.mark.parametrize("flag,value,needle", [
    ("--providers", "nope", "unknown provider 'nope'"),
    ("--variants", "nope", "unknown variant 'nope'"),
])
def test_report_unknown_names(flag: str, value: str, needle: str, capsys: pytest.CaptureFixture[str]) -> None:
    code, err = run(capsys, "report", flag, value)
    assert code == 2
    one_line_error(err, needle)


def test_report_bad_prices_and_unwritable_out(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    prices = tmp_path / "prices.json"
    prices.write_text("{\"gpt-4o\": {\"input_cost_per_token\": NaN}}")
    code, err = run(capsys, "report", "--prices", str(prices), "--variants", "spawn", "--providers", "deepseek")
    assert code == 2
    one_line_error(err, str(prices))
    blocker = tmp_path / "a-file"
    blocker.write_text("x")
    code, err = run(capsys, "report", "--out", str(blocker), "--variants", "spawn", "--providers", "deepseek",
                    "--quiet")
    assert code == 2
    one_line_error(err, str(blocker))
    assert blocker.read_text() == "x"


def test_fork_bad_input(parent: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    before = digest(parent)
    for argv, needle in [
        (["fork", str(tmp_path / "nope.json"), "--variant", "spawn", "--directive", "x"], "no such file"),
        (["fork", str(tmp_path), "--variant", "spawn", "--directive", "x"], "is a directory"),
        (["fork", str(parent), "--variant", "nope", "--directive", "x"], "unknown variant 'nope'"),
        (["fork", str(parent), "--variant", "spawn", "--directive", "x", "--provider", "nope"],
         "unknown provider 'nope'"),
    ]:
        code, err = run(capsys, *argv)
        assert code == 2, argv
        one_line_error(err, needle)
    truncated = tmp_path / "truncated.json"
    truncated.write_bytes(parent.read_bytes()[:100])
    code, err = run(capsys, "fork", str(truncated), "--variant", "one-shot-fork", "--directive", "x")
    assert code == 2
    one_line_error(err, str(truncated), "not valid JSON")
    assert digest(parent) == before


def test_calibrate_bad_input(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, err = run(capsys, "calibrate", str(tmp_path / "missing"))
    assert code == 2
    one_line_error(err, str(tmp_path / "missing"))
    code, err = run(capsys, "calibrate", str(tmp_path))
    assert code == 2
    one_line_error(err, str(tmp_path), "no session")
    scenario = tmp_path / "s"
    scenario.mkdir()
    log = scenario / "session.jsonl"
    log.write_text('{"type":"session","version":0,"id":"x"}\n{"type": "turn/start", "data": \n')
    before = digest(log)
    code, err = run(capsys, "calibrate", str(tmp_path))
    assert code == 2
    one_line_error(err, str(log), ":2")
    assert digest(log) == before
