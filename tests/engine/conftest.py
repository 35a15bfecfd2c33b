"""The engine test's setup: one vLLM engine (tiny random-weight model) for
the whole session, and a tally of every case sent to it.
``FIDELITY_ENGINE_URL`` points the tests at an engine already running
(started by ``VLLMEngine``, with no traffic yet) instead.

Collected only where vLLM is installed (the ``engine`` extra) or where
``FIDELITY_ENGINE_REQUIRED=1`` says the engine must run: then an engine
that cannot be installed or started FAILS the tests instead of skipping
them (``.ci/engine`` sets it).
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from typing import Any

import pytest

from fidelity.probe.engine import vllm_available

REQUIRED = os.environ.get("FIDELITY_ENGINE_REQUIRED") == "1"

if not REQUIRED and not vllm_available():
    collect_ignore_glob = ["test_*.py"]

_TALLY: dict[str, int] = {"cases": 0, "exact": 0, "eviction": 0}


@pytest.fixture(scope="session")
def engine() -> Iterator[Any]:
    """A started :class:`fidelity.probe.engine.VLLMEngine`; failure to start
    fails (``FIDELITY_ENGINE_REQUIRED=1``) or skips the dependent tests."""
    from fidelity.probe.client import ProbeError
    from fidelity.probe.engine import VLLMEngine

    url = os.environ.get("FIDELITY_ENGINE_URL")
    if url:  # an engine started by `fidelity.probe.engine.VLLMEngine` elsewhere (a fresh one: no earlier traffic)
        from types import SimpleNamespace

        from fidelity.probe.client import Endpoint
        from fidelity.probe.engine import SERVED_NAME, settings_from_metrics

        endpoint = Endpoint(url)
        yield SimpleNamespace(endpoint=endpoint, settings=settings_from_metrics(endpoint.metrics() or ""),
                              model=SERVED_NAME)
        return
    eng = VLLMEngine(num_blocks=96, max_model_len=12000)  # small: eviction is part of the test
    try:
        eng.start()
    except ProbeError as exc:
        if REQUIRED:
            pytest.fail(f"the vLLM engine could not start: {exc}", pytrace=False)
        pytest.skip(f"the vLLM engine could not start: {exc}")
    try:
        yield eng
    finally:
        eng.stop()


@pytest.fixture(scope="session")
def prober(engine: Any, tally: dict[str, int]) -> Any:
    """One prober for the session: predictions see every earlier request."""
    from fidelity import cache, tokens
    from fidelity.probe.run import Prober

    s = engine.settings
    model = cache.get("vllm", block_size=s.block_size, capacity_tokens=s.capacity_tokens, backend="cpu")
    p = Prober(engine.endpoint, model, tokens.get("deepseek-v4"), template="chatml", model=engine.model)
    p.tally = tally  # type: ignore[attr-defined]
    return p


@pytest.fixture(scope="session")
def tally() -> dict[str, int]:
    """Cases sent and cases exact, printed at the end of the run."""
    return _TALLY


def pytest_terminal_summary(terminalreporter: Any) -> None:
    if _TALLY["cases"]:
        terminalreporter.write_line(f"engine probe: {_TALLY['exact']} of {_TALLY['cases']} cases exact; "
                                    f"{_TALLY['eviction']} requests where eviction changed the engine's figure")
