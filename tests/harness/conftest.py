"""Real agent harnesses from npm, driven headless through `fidelity proxy`.

The pinned releases (each descriptor's ``ci_pinned`` in
``fidelity/data/harnesses/``) are installed by the library's installer
(:func:`fidelity.harness.install.install`) into
``$FIDELITY_HARNESS_CACHE/NAME@VERSION`` (default
``~/.cache/fidelity/harness``), once, and reused by later runs. Node and
npm missing (or the install failing): the tests skip, unless
``FIDELITY_HARNESS_REQUIRED=1``, when they fail. They run when selected with
``-m harness`` or when ``FIDELITY_HARNESS=1`` / ``FIDELITY_HARNESS_REQUIRED=1``
is set (``.ci/harness`` does both); a plain ``pytest`` skips them, so the
main suite does not pay for them twice.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Callable
from pathlib import Path

import pytest

from fidelity.errors import FidelityError
from fidelity.harness import install, load


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


@pytest.fixture(scope="session")
def harness_bin() -> Callable[[str], Path]:
    """``harness_bin("qwen-code")``: the executable of the descriptor's
    pinned release, installed on first use."""
    if not shutil.which("node") or not shutil.which("npm"):
        unavailable("node and npm are not on PATH")

    def path(name: str) -> Path:
        d = load(name)
        try:
            return install.install(d, d.ci_pinned[0])
        except FidelityError as exc:
            unavailable(str(exc))
            raise

    return path
