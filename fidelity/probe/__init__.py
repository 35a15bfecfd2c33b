"""Live probe: send a parent and its child to a real engine and compare the
cached tokens it reports with fidelity's prediction.

* :mod:`.client`: OpenAI-compatible endpoint, reported cached tokens.
* :mod:`.predict`: the prompt token ids fidelity predicts the engine sees.
* :mod:`.cases`: parent/child cases aimed at each cache rule.
* :mod:`.run`: the prober (history-aware predictions) and the summary.
* :mod:`.engine`: a local vLLM engine with a tiny model built at run time.

See ``docs/probe.md``.
"""

from __future__ import annotations

from .cases import KINDS, ProbeCase, chat_case, fixture_case, generate, token_case
from .client import Endpoint, ProbeError, Reported, reported_usage
from .run import CaseResult, Measurement, Prober, Summary

__all__ = ["KINDS", "ProbeCase", "chat_case", "fixture_case", "generate", "token_case", "Endpoint", "ProbeError",
           "Reported", "reported_usage", "CaseResult", "Measurement", "Prober", "Summary"]
