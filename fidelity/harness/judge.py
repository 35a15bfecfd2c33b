"""Each child against its parent, as sent to each provider that speaks the
harness's wire format. :func:`judge` is the harness package's one call into
the diff library (:func:`fidelity.diff.compare`, as ``fidelity diff``); its
dollars are the diff result's cost (:mod:`fidelity.pricing`), per 1,000
spawns the same figure in a larger unit."""

from __future__ import annotations

from dataclasses import dataclass

from ..diff import compare
from ..proxy.harness_rows import SCENARIOS, Scenario

__all__ = ["Finding", "PROVIDERS", "VERDICTS", "judge", "providers_for", "provider_id", "verdict"]

#: a Gemini body scored as sent to Google's Gemini API (implicit caching)
_GEMINI = (Scenario("Gemini API (gemini-2.5-pro)", "gemini", "gemini-2.5-pro"),)
#: a Responses API body (Codex CLI) scored as sent to OpenAI's Responses API; gpt-5.1 is the
#: nearest priced model to the gpt-5.1-codex the harness is configured with
_RESPONSES = (Scenario("OpenAI Responses (gpt-5.1)", "openai-responses", "gpt-5.1"),)
_FAMILIES: dict[str, tuple[Scenario, ...]] = {**SCENARIOS, "gemini": _GEMINI, "openai-responses": _RESPONSES}


def provider_id(sc: Scenario) -> str:
    """A short name for ``--provider``: the dialect, or
    ``anthropic-third-party`` for an Anthropic-compatible endpoint elsewhere."""
    if sc.dialect == "anthropic-messages" and sc.endpoint and "api.anthropic.com" not in sc.endpoint:
        return "anthropic-third-party"
    return sc.dialect


#: --provider name -> (wire family, scenario)
PROVIDERS: dict[str, tuple[str, Scenario]] = {
    provider_id(sc): (family, sc) for family, scs in _FAMILIES.items() for sc in scs
}


def providers_for(family: str, wanted: list[str] | None = None) -> list[Scenario]:
    """The scenarios a body of ``family`` is scored under, ``wanted`` ids only when given."""
    return [sc for sc in _FAMILIES[family] if not wanted or provider_id(sc) in wanted]


#: what a judged row says: the child reads the parent's cache and loses nothing
#: ("kept"), loses cached tokens ("broken"), or neither side holds anything the
#: provider caches, the prompts being under its minimum ("too small to cache")
VERDICTS = ("kept", "broken", "too small to cache")


def verdict(lost: int, read: int) -> str:
    """The row's verdict from the child's lost and predicted cached tokens."""
    return "broken" if lost > 0 else "kept" if read > 0 else "too small to cache"


@dataclass(frozen=True)
class Finding:
    """What one child costs against its parent at one provider."""

    provider: str
    verdict: str  # one of VERDICTS
    segment: str | None
    pointer: str | None
    cause: str
    cause_detail: str | None
    kept_tokens: int
    lost_tokens: int
    child_prompt: int
    estimated: bool
    usd_per_1000: float | None


def judge(parent: bytes, child: bytes, sc: Scenario, *, parent_path: str | None = None,
          child_path: str | None = None) -> Finding:
    r = compare(parent, child, dialect=sc.dialect, model=sc.model, endpoint=sc.endpoint,
                parent_path=parent_path, child_path=child_path)
    seg = r.view.segment
    return Finding(
        provider=sc.label,
        verdict=verdict(r.cache.lost, r.cache.predicted_cached),
        segment=None if seg is None else f"{seg[0]}[{seg[1]}]",
        pointer=r.view.pointer,
        cause=r.cause.kind,
        cause_detail=r.cause.detail,
        kept_tokens=r.cache.predicted_cached,
        lost_tokens=r.cache.lost,
        child_prompt=r.tokens.child_prompt,
        estimated=r.tokens.estimated,
        usd_per_1000=None if r.cost is None else round(r.cost.usd_lost * 1000, 4),
    )
