"""The cache computation ``fidelity diff`` shares with replay and scan.

A child's read and write are what :class:`fidelity.cache.simulator.Simulator`
answers for it after its parent was fed: the one simulator every command
uses (replay rows, scan partials, the proxy's verdict lines), never the
cache model's pairwise shortcut, so that ``diff`` and ``scan`` name the
same figure for the same pair.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from ..cache import CacheModel, PromptTokens
    from ..cache.simulator import Prediction, SimRequest

__all__ = ["simulated", "as_request"]


def as_request(prompt: PromptTokens, label: str) -> SimRequest:
    """A :class:`~fidelity.cache.PromptTokens` as the simulator's request."""
    from ..cache.simulator import SimRequest

    return SimRequest(prompt.tokens, prompt.time, prompt.breakpoints, prompt.ttls, prompt.blocks,
                      prompt.output, label=label)


def simulated(cm: CacheModel, earlier: Sequence[PromptTokens], child: PromptTokens) -> Prediction:
    """What ``child`` reads and writes when sent after ``earlier`` (fed in
    time order to a fresh simulator of the cache model ``cm``)."""
    from ..cache.simulator import Simulator

    sim = Simulator(cache_model=cm)
    sim.run([as_request(p, f"parent#{i}") for i, p in enumerate(earlier)])
    return sim.predict(as_request(child, "child"))
