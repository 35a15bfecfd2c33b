"""Each child against its parent, as sent to each provider that speaks the
harness's wire format, through the proxy's verdict
(:func:`fidelity.proxy.parent.judge`, the differ's); dollars per 1,000 spawns."""

from __future__ import annotations

from dataclasses import dataclass

from ..proxy.harness_rows import SCENARIOS, Scenario
from ..proxy.parent import judge as verdict_of
from ..wire.anthropic_messages import billing_block_keyed

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
    if sc.dialect == "anthropic-messages" and sc.endpoint and billing_block_keyed(sc.endpoint):
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
    v = verdict_of(parent, child, sc.dialect, model=sc.model, endpoint=sc.endpoint, parent_path=parent_path,
                   child_path=child_path)
    return Finding(sc.label, verdict(v.lost_tokens, v.predicted_cached), v.segment, v.pointer, v.cause, v.detail,
                   v.predicted_cached, v.lost_tokens, v.prompt_tokens, v.estimated,
                   None if v.usd_lost is None else round(v.usd_lost * 1000, 4))
