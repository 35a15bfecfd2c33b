"""DeepSeek's cache rules fitted on one part of the recorded sessions and
reported on the other: scenario folders split by a hash of the scenario name,
the unit re-derived on the fit part (:func:`fit_unit`), the exact-match share
reported on both (:class:`SplitFigures`), header anchors left out of both.
Why and what stays fitted on all sessions: docs/calibration.md."""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from . import tokens, wire
from .cache import get
from .calibrate import GroupInput, StepResult, calibrate

__all__ = ["part_of", "fit_unit", "SplitFigures", "split_figures"]


def part_of(scenario: str) -> str:
    """``"fit"`` or ``"held_out"``: the low bit of SHA-256 of the scenario name."""
    return "fit" if hashlib.sha256(scenario.encode()).digest()[0] & 1 == 0 else "held_out"


def fit_unit(steps: Sequence[StepResult], cap: int = 4096) -> int:
    """Largest power of two (at most ``cap``) dividing every non-zero
    reported cache read of ``steps`` (1 when there is none)."""
    reads = [s.real_cached for s in steps if s.real_cached]
    if not reads:
        return 1
    unit = cap
    while unit > 1 and any(r % unit for r in reads):
        unit //= 2
    return unit


@dataclass(frozen=True)
class SplitFigures:
    unit: int
    fit_scenarios: int
    held_out_scenarios: int
    fit_requests: int
    held_out_requests: int
    fit_exact: float | None
    held_out_exact: float | None

    def to_json(self) -> dict[str, Any]:
        return dict(self.__dict__)


def _exact(steps: Sequence[StepResult]) -> tuple[int, float | None]:
    scored = [s for s in steps if not s.anchor]
    return len(scored), (round(sum(s.cached_error == 0 for s in scored) / len(scored), 4) if scored else None)


def split_figures(groups: Sequence[GroupInput], model: str = "deepseek-v4-flash") -> SplitFigures:
    """Fit the unit on the fit part, then score both parts with it."""
    tok = tokens.for_model(model, "deepseek")
    render = wire.get("deepseek").render
    fit = [g for g in groups if part_of(g.group.name) == "fit"]
    held = [g for g in groups if part_of(g.group.name) == "held_out"]
    first = calibrate(fit, tok, render)
    unit = fit_unit([s for r in first.sessions for s in r.steps])
    model_ = get("deepseek", unit=unit)
    fit_steps = [s for r in calibrate(fit, tok, render, model_).sessions for s in r.steps]
    held_steps = [s for r in calibrate(held, tok, render, model_).sessions for s in r.steps]
    nf, ef = _exact(fit_steps)
    nh, eh = _exact(held_steps)
    return SplitFigures(unit, len(fit), len(held), nf, nh, ef, eh)
