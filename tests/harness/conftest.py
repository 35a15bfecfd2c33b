"""Real agent harnesses from npm, driven headless through `fidelity proxy`.

The pinned packages are installed with npm into a folder these tests own,
outside the repository (``$FIDELITY_NPM_CACHE``, default
``~/.cache/fidelity-tests/npm``), once, and reused by later runs. Node and
npm missing (or the install failing): the tests skip, unless
``FIDELITY_HARNESS_REQUIRED=1``, when they fail. They run when selected with
``-m harness`` or when ``FIDELITY_HARNESS=1`` / ``FIDELITY_HARNESS_REQUIRED=1``
is set (``.ci/harness`` does both); a plain ``pytest`` skips them, so the
main suite does not pay for them twice.
"""

from __future__ import annotations

import fcntl
import json
import os
import shutil
import subprocess
from collections.abc import Callable
from pathlib import Path

import pytest

#: harness -> (npm package, pinned version, executable)
HARNESSES: dict[str, tuple[str, str, str]] = {
    "qwen-code": ("@qwen-code/qwen-code", "0.24.4", "qwen"),
    "claude-code": ("@anthropic-ai/claude-code", "2.1.197", "claude"),
}
NPM_DIR = Path(os.environ.get("FIDELITY_NPM_CACHE") or Path.home() / ".cache" / "fidelity-tests" / "npm")


def _required() -> bool:
    return os.environ.get("FIDELITY_HARNESS_REQUIRED") == "1"


def unavailable(reason: str) -> None:
    """Skip, or fail when the harnesses are required."""
    if _required():
        pytest.fail(f"harness required (FIDELITY_HARNESS_REQUIRED=1) but {reason}", pytrace=False)
    pytest.skip(reason)


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    wanted = "harness" in (config.option.markexpr or "") or _required() or os.environ.get("FIDELITY_HARNESS") == "1"
    if wanted:
        return
    skip = pytest.mark.skip(reason="real-harness test: run with -m harness or FIDELITY_HARNESS=1 (.ci/harness)")
    for item in items:
        if item.get_closest_marker("harness"):
            item.add_marker(skip)


def _installed(package: str, version: str) -> bool:
    meta = NPM_DIR / "node_modules" / package / "package.json"
    try:
        return json.loads(meta.read_text())["version"] == version
    except (OSError, ValueError, KeyError):
        return False


@pytest.fixture(scope="session")
def harness_bin() -> Callable[[str], Path]:
    """``harness_bin("qwen-code")``: the path of the pinned executable,
    installing every pinned harness on first use."""
    if not shutil.which("node") or not shutil.which("npm"):
        unavailable("node and npm are not on PATH")
    NPM_DIR.mkdir(parents=True, exist_ok=True)
    with open(NPM_DIR / ".install.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # parallel test runs install once
        missing = [f"{p}@{v}" for p, v, _ in HARNESSES.values() if not _installed(p, v)]
        if missing:
            r = subprocess.run(["npm", "install", "--prefix", str(NPM_DIR), "--no-audit", "--no-fund",
                                "--no-save", "--loglevel=error", *missing],
                               capture_output=True, text=True, timeout=900)
            if r.returncode != 0:
                unavailable(f"npm install {' '.join(missing)} failed: {(r.stderr or r.stdout).strip()[-300:]}")

    def path(name: str) -> Path:
        package, version, exe = HARNESSES[name]
        p = NPM_DIR / "node_modules" / ".bin" / exe
        if not p.exists() or not _installed(package, version):
            unavailable(f"{package}@{version} is not installed in {NPM_DIR}")
        return p

    return path
