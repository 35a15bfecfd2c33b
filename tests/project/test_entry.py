"""The process entry point (``fidelity._entry.run``): ``fidelity diff`` ends
with ``os._exit`` after flushing and running ``atexit`` handlers, and what a
user sees (output, errors, exit status) is what a normal exit gives."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from fidelity import wire
from fidelity.model import Message, Request, Route, SystemBlock, Text

REPO = Path(__file__).resolve().parents[2]


def _bodies(tmp_path: Path) -> tuple[Path, Path]:
    msgs = tuple(Message("user" if i % 2 == 0 else "assistant", (Text(f"turn {i} " * 50),)) for i in range(40))
    parent = Request(Route("openai", "gpt-4o"), (SystemBlock("Be brief."),), (), msgs)
    child = Request(parent.route, parent.system, (), msgs[:-1] + (Message("user", (Text("changed"),)),))
    d = wire.get("openai-chat")
    a, b = tmp_path / "parent.json", tmp_path / "child.json"
    a.write_bytes(d.render(parent))
    b.write_bytes(d.render(child))
    return a, b


def _run(args: list[str], *, slow: bool, code: str | None = None) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    env.pop("FIDELITY_SLOW_EXIT", None)
    if slow:
        env["FIDELITY_SLOW_EXIT"] = "1"
    cmd = [sys.executable, "-c", code, *args] if code else [sys.executable, "-m", "fidelity", *args]
    return subprocess.run(cmd, env=env, cwd=REPO, capture_output=True, text=True, timeout=120, check=False)


@pytest.mark.parametrize("extra", [[], ["--json"]])
def test_fast_exit_prints_what_a_normal_exit_prints(tmp_path: Path, extra: list[str]) -> None:
    a, b = _bodies(tmp_path)
    fast = _run(["diff", str(a), str(b), *extra], slow=False)
    slow = _run(["diff", str(a), str(b), *extra], slow=True)
    assert fast.returncode == slow.returncode == 0
    assert fast.stdout == slow.stdout and "messages_rewritten" in fast.stdout
    assert fast.stderr == slow.stderr == ""


def test_fast_exit_keeps_bad_input_errors(tmp_path: Path) -> None:
    a, _ = _bodies(tmp_path)
    bad = tmp_path / "bad.json"
    bad.write_bytes(b'{"model": "gpt-4o", "messages": [}')
    fast = _run(["diff", str(a), str(bad)], slow=False)
    slow = _run(["diff", str(a), str(bad)], slow=True)
    assert fast.returncode == slow.returncode == 2
    assert fast.stderr == slow.stderr and fast.stderr.count("\n") == 1 and "bad.json" in fast.stderr


def test_fast_exit_runs_atexit_handlers(tmp_path: Path) -> None:
    a, b = _bodies(tmp_path)
    code = ("import atexit, sys\n"
            "sys.argv = ['fidelity', *sys.argv[1:]]\n"
            "atexit.register(lambda: print('atexit ran', file=sys.stderr))\n"
            "from fidelity._entry import run\n"
            "run()\n")
    done = _run(["diff", str(a), str(b)], slow=False, code=code)
    assert done.returncode == 0 and "messages_rewritten" in done.stdout
    assert done.stderr == "atexit ran\n"
