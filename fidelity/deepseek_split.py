"""DeepSeek's cache rules fitted on one part of the recorded sessions and
reported on the other.

The DeepSeek model's data-derived settings (:data:`fidelity.cache.DEEPSEEK_UNIT`,
the 128-token unit; reply caching) were first read off all recorded DeepSeek
Harness sessions at once, so their accuracy on those sessions is a fitted
figure. Here the scenario folders are split deterministically by a hash of
the scenario name into a *fit* part and a *held-out* part; the unit is
re-derived on the fit part alone (:func:`fit_unit`: the largest power of two
that divides every non-zero cache read reported there), and the exact-match
share of predicted cached tokens is reported on both parts
(:class:`SplitFigures`). Requests a session cannot explain (header anchors:
a header's first request, whose length is fitted on that request by
construction) are left out of both exact-match shares, as calibration does.

Constants that stay and why: the ``{{cwd}}`` stand-in
(:data:`fidelity.calibrate.CWD_STANDIN`) only restores the length of a
working-directory path the logs elide; it is a token-count correction, not a
cache rule, and it was chosen on all sessions (said here, not hidden). Header
anchoring fixes each header's unknown length on its own first request and
never on a later one.
"""

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
