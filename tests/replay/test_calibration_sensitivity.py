"""How much the calibration figures depend on the fitted header lengths
(docs/calibration.md, "What is fitted"). Replays ../shared/real/deepseek-harness;
skipped when it is absent."""

from __future__ import annotations

from pathlib import Path

import pytest

from fidelity import tokens, wire
from fidelity.calibrate import Calibration, calibrate, load

REAL = Path(__file__).resolve().parents[2] / ".." / "shared" / "real" / "deepseek-harness"
pytestmark = pytest.mark.skipif(not REAL.is_dir(), reason="../shared/real/deepseek-harness is absent")


def _run(shift: int) -> Calibration:
    return calibrate(load(REAL), tokens.get("deepseek-v4"), wire.get("deepseek").render, header_shift=shift)


def _figures(result: Calibration) -> tuple[int, int, int, int, int]:
    """(non-anchor cached exact, non-anchor prompt within 5 tokens, non-anchor prompt exact,
    over-predicted, under-predicted)"""
    steps = [s for session in result.sessions for s in session.steps if not s.anchor]
    return (sum(s.cached_error == 0 for s in steps), sum(abs(s.prompt_error) <= 5 for s in steps),
            sum(s.prompt_error == 0 for s in steps), result.summary.over_predicted, result.summary.under_predicted)


def test_fitted_figures_as_documented() -> None:
    result = _run(0)
    assert result.summary.prompt_steps == 33 and result.summary.steps == 53
    assert _figures(result) == (31, 26, 12, 2, 15)  # 93.9 %; "26 of 33 within 5 tokens"


@pytest.mark.parametrize("shift, exact, over, under", [(-32, 26, 2, 20), (32, 22, 11, 15)])
def test_header_length_off_by_32(shift: int, exact: int, over: int, under: int) -> None:
    figures = _figures(_run(shift))
    assert (figures[0], figures[3], figures[4]) == (exact, over, under)  # 78.8 % and 66.7 %
    assert figures[2] == 0  # no prompt is exact once every header is off by 32 tokens
