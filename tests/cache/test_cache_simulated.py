"""``simulated`` keeps the simulators fed the last few parent sequences
(:mod:`fidelity.cache.simulator`): each answer equals a fresh simulator's,
whatever was asked before, with equal cache models made anew per call."""

from __future__ import annotations

from array import array
from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from fidelity import cache
from fidelity.cache import simulator
from fidelity.cache._base import PromptTokens

#: (provider, settings): models with the same class and different settings, and an explicit one
_MODELS = [("openai", {}), ("deepseek", {}), ("vllm", {"block_size": 4}), ("vllm", {"block_size": 8}),
           ("anthropic", {})]


def _fresh(cm: Any, earlier: list[PromptTokens], request: PromptTokens) -> Any:
    """A fresh simulator fed the ``earlier`` prompts sent no later than ``request``."""
    earlier = [p for p in earlier if p.time <= request.time]
    sim = simulator.Simulator(cache_model=cm)
    sim.run([simulator.as_request(p, f"parent#{i}") for i, p in enumerate(earlier)])
    return sim.predict(simulator.as_request(request, "child"))


@st.composite
def questions(draw: Any) -> list[tuple[int, list[PromptTokens], PromptTokens]]:
    base = draw(st.lists(st.integers(0, 5), min_size=1100, max_size=1300))
    prompts = []
    for k in range(draw(st.integers(1, 4))):
        cut = draw(st.integers(1000, len(base)))
        tail = draw(st.lists(st.integers(0, 5), max_size=200))
        bps = draw(st.sampled_from([(), (cut,)]))
        prompts.append(PromptTokens(array("q", base[:cut] + tail), float(k), bps))
    out = []
    for _ in range(draw(st.integers(1, 12))):
        model = draw(st.integers(0, len(_MODELS) - 1))
        earlier = draw(st.lists(st.sampled_from(prompts), max_size=2))
        earlier = sorted(earlier, key=lambda p: p.time)
        # a new but equal prompt object now and then: equal prompts, not the same objects
        earlier = [PromptTokens(array("q", p.tokens), p.time, p.breakpoints) if draw(st.booleans()) else p
                   for p in earlier]
        request = draw(st.sampled_from(prompts))
        when = draw(st.sampled_from([1.0, 1.5, 10.0]))  # before some earlier prompts, at one, after all
        out.append((model, earlier, PromptTokens(request.tokens, when, request.breakpoints)))
    return out


@given(asked=questions())
def test_kept_simulators_answer_as_fresh_ones(asked: list[Any]) -> None:
    simulator._FED.clear()
    for model, earlier, request in asked:
        name, params = _MODELS[model]
        got = simulator.simulated(cache.get(name, **params), earlier, request)
        assert got == _fresh(cache.get(name, **params), earlier, request)
    assert len(simulator._FED) <= simulator._FED_KEPT


def test_an_equal_parent_reuses_the_fed_simulator() -> None:
    simulator._FED.clear()
    parent = PromptTokens(array("q", range(2000)), 0.0)
    child = PromptTokens(array("q", [*range(1500), 7, 7]), 1.0)
    first = simulator.simulated(cache.get("openai"), [parent], child)
    assert len(simulator._FED) == 1
    again = simulator.simulated(cache.get("openai"), [PromptTokens(array("q", range(2000)), 0.0)], child)
    assert again == first and len(simulator._FED) == 1
    simulator.simulated(cache.get("vllm", block_size=4), [parent], child)  # other settings: fed anew
    simulator.simulated(cache.get("openai"), [PromptTokens(array("q", range(2000)), 5.0)], child)  # another time
    assert len(simulator._FED) == 3
    assert not simulator._same_model(cache.get("vllm", block_size=4), cache.get("vllm", block_size=8))
    assert simulator._same_model(cache.get("anthropic"), cache.get("anthropic"))


def test_a_later_prompt_is_left_out_whatever_was_asked_before() -> None:
    """The kept simulators are those fed the prompts sent no later than the
    request: asking after a later prompt first does not make an earlier
    request read it."""
    simulator._FED.clear()
    m = cache.get("openai")
    prompt = PromptTokens(array("q", range(3000)), 5.0)
    after = PromptTokens(array("q", range(3000)), 9.0)
    before = PromptTokens(array("q", range(3000)), 1.0)
    assert simulator.simulated(m, [prompt], after).cache_read == m.reusable(3000, 3000) > 0
    assert simulator.simulated(m, [prompt], before).cache_read == 0
    assert simulator.simulated(m, [prompt], PromptTokens(array("q", range(3000)), 5.0)).cache_read > 0  # same time
    assert simulator.simulated(m, [prompt], after).cache_read == m.reusable(3000, 3000)
