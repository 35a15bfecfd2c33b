"""The examples in docs/real-traffic.md and in the docstrings of the new
modules run as written."""

from __future__ import annotations

import doctest
import importlib
from pathlib import Path

import pytest

DOC = Path(__file__).resolve().parents[2] / "docs" / "real-traffic.md"


def test_real_traffic_doc_examples_run() -> None:
    result = doctest.testfile(str(DOC), module_relative=False, optionflags=doctest.ELLIPSIS)
    assert result.attempted >= 15
    assert result.failed == 0


@pytest.mark.parametrize("name", ["fidelity.wire.layout", "fidelity.wire.evidence", "fidelity.capture.classify",
                                  "fidelity.traffic.usage", "fidelity.providers"])
def test_module_doctests(name: str) -> None:
    result = doctest.testmod(importlib.import_module(name), optionflags=doctest.ELLIPSIS)
    assert result.attempted >= 1 and result.failed == 0
