"""The command line itself: commands imported on demand, a closed pipe is not
an error, every command in the table is importable and complete."""

from __future__ import annotations

import importlib
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from fidelity import cli

REPO = Path(__file__).resolve().parents[2]
ENV = {**os.environ, "PYTHONPATH": str(REPO)}
BODY = {"model": "gpt-4o", "messages": [{"role": "system", "content": "You are terse."},
                                        {"role": "user", "content": "hello " * 200}]}


def _bodies(tmp_path: Path) -> tuple[Path, Path]:
    parent, child = tmp_path / "p.json", tmp_path / "c.json"
    parent.write_text(json.dumps(BODY))
    child_body = json.loads(json.dumps(BODY))
    child_body["messages"][0]["content"] = "You are terse. Today is Monday."
    child.write_text(json.dumps(child_body))
    return parent, child


def _run_closed_stdout(*args: str) -> subprocess.CompletedProcess[bytes]:
    """Run ``python -m fidelity ARGS`` with stdout a pipe whose reader has
    already gone (what ``| head`` does once it has its lines): every write
    fails with EPIPE."""
    read_end, write_end = os.pipe()
    os.close(read_end)
    try:
        return subprocess.run([sys.executable, "-m", "fidelity", *args], stdout=write_end,
                              stderr=subprocess.PIPE, env=ENV, cwd=REPO, timeout=120, check=False)
    finally:
        os.close(write_end)


@pytest.mark.parametrize("json_flag", [(), ("--json",)], ids=["console", "json"])
def test_closed_pipe_is_not_an_error(tmp_path: Path, json_flag: tuple[str, ...]) -> None:
    parent, child = _bodies(tmp_path)
    done = _run_closed_stdout("diff", str(parent), str(child), *json_flag)
    assert done.returncode == 0, done.stderr.decode()
    assert done.stderr == b""  # no traceback, no "Exception ignored" at exit


def test_closed_pipe_render() -> None:
    done = _run_closed_stdout("render", "--provider", "openai-chat", str(REPO / "fixtures" / "request.example.json"))
    assert done.returncode == 0 and done.stderr == b""


def test_unwritable_output_is_still_exit_2(tmp_path: Path) -> None:
    """A real OSError (a file where the output folder goes) keeps its one-line message."""
    blocker = tmp_path / "file"
    blocker.write_text("x")
    done = subprocess.run([sys.executable, "-m", "fidelity", "report", "--providers", "openai-chat",
                           "--variants", "one-shot-fork", "--out", str(blocker / "out"), "--quiet"],
                          capture_output=True, env=ENV, cwd=REPO, timeout=300, text=True, check=False)
    assert done.returncode == 2 and done.stderr.count("\n") == 1 and "Traceback" not in done.stderr


def _modules_after(*args: str) -> set[str]:
    code = ("import sys, io, contextlib\nfrom fidelity import cli\n"
            "with contextlib.redirect_stdout(io.StringIO()):\n"
            "    try:\n        cli.main(sys.argv[1:])\n    except SystemExit:\n        pass\n"
            "print('\\n'.join(sorted(sys.modules)))")
    out = subprocess.run([sys.executable, "-c", code, *args], capture_output=True, env=ENV, cwd=REPO,
                         timeout=120, text=True, check=True).stdout
    return set(out.split())


def test_help_imports_no_command() -> None:
    loaded = _modules_after("--help")
    assert not [m for m in loaded if m.startswith("fidelity.commands.")]
    assert not {"rich", "deepdiff", "numpy", "tiktoken"} & loaded


def test_diff_imports_only_what_it_uses(tmp_path: Path) -> None:
    parent, child = _bodies(tmp_path)
    loaded = _modules_after("diff", str(parent), str(child))
    assert "fidelity.commands.diff" in loaded
    others = {f"fidelity.commands.{c.module}" for name, c in cli.COMMANDS.items() if name != "diff"}
    assert not others & loaded
    # the heavy libraries a console diff does not need
    assert not {"deepdiff", "numpy", "httpx", "fidelity.report", "fidelity.score"} & loaded


def test_every_command_module_is_complete() -> None:
    for name, entry in cli.COMMANDS.items():
        module = importlib.import_module(f"fidelity.commands.{entry.module}")
        assert module.HELP and callable(module.add_arguments) and callable(module.run), name
    parser = cli.build_parser()  # all commands, as before
    assert parser.parse_args(["diff", "a", "b"]).command == "diff"


@pytest.mark.parametrize("argv, expected", [
    (["diff", "a", "b"], "diff"),
    (["--debug", "report"], "report"),
    (["--help"], None),
    (["nope"], None),
    ([], None),
])
def test_chosen_command(argv: list[str], expected: str | None) -> None:
    assert cli.chosen_command(argv) == expected


def test_closed_pipe_report(tmp_path: Path) -> None:
    """The case from the review: ``fidelity report | head`` exited 2 with an error line."""
    done = _run_closed_stdout("report", "--providers", "openai-chat", "--variants", "one-shot-fork",
                              "--out", str(tmp_path))
    assert done.returncode == 0 and done.stderr == b"", done.stderr.decode()
    assert (tmp_path / "fidelity-report.json").is_file()  # the reports are written before the table
