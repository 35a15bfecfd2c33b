"""Shared test setup: hypothesis profiles and paths to shared data.

CI runs the ``ci`` profile: derandomized, so a red run reproduces, and at
least 200 examples per property. Explore locally with
``HYPOTHESIS_PROFILE=explore pytest``.
"""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

import pytest
from hypothesis import HealthCheck, settings

settings.register_profile(
    "ci",
    derandomize=True,
    max_examples=200,
    deadline=None,
    print_blob=True,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
settings.register_profile(
    "explore",
    max_examples=2000,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "ci"))

# Vocabulary copies (fidelity/tokens/_vocab_cache.py) go to a temporary
# folder, not the user's ~/.cache, unless a run chooses otherwise.
os.environ.setdefault("FIDELITY_CACHE_DIR", str(Path(tempfile.gettempdir()) / "fidelity-test-cache"))

# The one fresh-seed fuzz pass (tests/hostile/test_fuzz_fresh.py) draws new inputs
# each run; its seed is chosen here so that the session header can print it.
os.environ.setdefault("FIDELITY_FUZZ_SEED", str(int.from_bytes(os.urandom(8), "big")))


def _seed_line() -> str:
    seed = os.environ["FIDELITY_FUZZ_SEED"]
    return f"fidelity fuzz seed: {seed} (set FIDELITY_FUZZ_SEED={seed} to replay the fresh-seed pass)"


def pytest_report_header() -> str:
    return _seed_line()


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    # also under -q, which prints no header; xdist's workers inherit the
    # controller's environment, so this is the seed they drew from
    terminalreporter.write_line(_seed_line())

REPO = Path(__file__).resolve().parent.parent
SHARED_REAL = REPO.parent / "shared" / "real"


@pytest.fixture
def shared_real() -> Path:
    """``../shared/real``; the test is skipped when the folder is absent."""
    if not SHARED_REAL.is_dir():
        pytest.skip("../shared/real is absent")
    return SHARED_REAL
