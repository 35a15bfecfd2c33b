"""Send probe requests and set fidelity's prediction (from every request this
prober sent before) beside the figure the server reports, request by request.
One output token is asked for, so the engine holds KV for the prompt alone.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from ..cache import CacheModel, PromptTokens
from ..cache.simulator import simulated
from ..tokens import Tokenizer
from .cases import ProbeCase
from .client import Endpoint
from .predict import prompt_ids, route_of

__all__ = ["Measurement", "CaseResult", "Summary", "Prober"]


@dataclass(frozen=True)
class Measurement:
    """One request: prompt and cached tokens, predicted and reported."""

    case: str
    index: int
    route: str
    predicted_prompt: int
    reported_prompt: int
    predicted_cached: int
    reported_cached: int

    @property
    def exact(self) -> bool:
        return self.predicted_cached == self.reported_cached and self.predicted_prompt == self.reported_prompt

    @property
    def label(self) -> str:
        return f"{self.case}#{self.index}"


@dataclass(frozen=True)
class CaseResult:
    case: ProbeCase
    measurements: tuple[Measurement, ...]

    @property
    def exact(self) -> bool:
        return all(m.exact for m in self.measurements)


@dataclass
class Summary:
    """All cases of one run; :meth:`as_json` is the ``--json`` object."""

    engine: str
    version: str
    block_size: int
    results: list[CaseResult] = field(default_factory=list)

    @property
    def exact(self) -> int:
        return sum(r.exact for r in self.results)

    def mismatches(self) -> list[Measurement]:
        return [m for r in self.results for m in r.measurements if not m.exact]

    def as_json(self) -> dict[str, Any]:
        rows = []
        for m in self.mismatches():
            row: dict[str, Any] = {"case": m.label, "predicted": m.predicted_cached, "reported": m.reported_cached}
            if m.predicted_prompt != m.reported_prompt:
                row["predicted_prompt"] = m.predicted_prompt
                row["reported_prompt"] = m.reported_prompt
            rows.append(row)
        return {"engine": self.engine, "version": self.version, "block_size": self.block_size,
                "cases": len(self.results), "exact": self.exact, "mismatches": rows}


class Prober:
    """Sends requests to ``endpoint`` and predicts each with ``cache_model``
    over the history of everything sent so far."""

    def __init__(self, endpoint: Endpoint, cache_model: CacheModel, tokenizer: Tokenizer, *,
                 template: str = "chatml", model: str | None = None, max_tokens: int | None = 1) -> None:
        self.endpoint = endpoint
        self.cache_model = cache_model
        self.tokenizer = tokenizer
        self.template = template
        self.model = model
        self.max_tokens = max_tokens
        self.history: list[PromptTokens] = []

    def prepare(self, body: Mapping[str, Any]) -> dict[str, Any]:
        """The body as sent: ``model`` replaced when one is given, one
        output token, no streaming."""
        out = dict(body)
        if self.model is not None:
            out["model"] = self.model
        if self.max_tokens is not None:
            out["max_tokens"] = self.max_tokens
            out.pop("max_completion_tokens", None)
        out["stream"] = False
        out.pop("stream_options", None)
        return out

    def send(self, body: Mapping[str, Any], *, case: str = "request", index: int = 0) -> Measurement:
        sent = self.prepare(body)
        route = route_of(sent)
        ids = prompt_ids(sent, self.tokenizer, self.template)
        request = PromptTokens(ids, time=float(len(self.history)))
        predicted = simulated(self.cache_model, self.history, request)  # the one cache computation
        _, reported = self.endpoint.send(route, sent)
        self.history.append(request)
        return Measurement(case, index, route, len(ids), reported.prompt_tokens, predicted.cache_read or 0,
                           reported.cached_tokens)

    def run_case(self, case: ProbeCase) -> CaseResult:
        return CaseResult(case, tuple(self.send(b, case=case.name, index=i) for i, b in enumerate(case.bodies)))

    def run(self, cases: Iterable[ProbeCase], summary: Summary) -> Summary:
        for case in cases:
            summary.results.append(self.run_case(case))
        return summary
