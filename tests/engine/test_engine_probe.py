"""fidelity's prediction against vLLM's own prefix cache, case by case.

Every case is sent to the running engine; the cached tokens it reports
must equal what fidelity's EngineCache predicts from the token ids fidelity
computes itself (and the prompt length must agree too). The engine runs
with a small KV cache (96 blocks of 128 tokens, conftest) so that eviction
is part of every prediction. Example counts:
``test_token_cases`` 160, ``test_chat_cases`` 40, ``test_block_edges`` 12,
``test_fixture_variants`` one per bundled composition variant (17):
229 cases, all derandomized.
"""

from __future__ import annotations

import os
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from fidelity import compose
from fidelity.cache import EngineCache
from fidelity.cache.simulator import Simulator, as_request
from fidelity.probe import cases
from fidelity.probe.run import CaseResult

ENGINE_BLOCKS = 96  # the test engine's KV cache, in blocks (conftest)

#: mixed into every case seed; set FIDELITY_ENGINE_SALT when re-running against
#: one engine (FIDELITY_ENGINE_URL) so that its cache holds none of the new cases
SALT = int(os.environ.get("FIDELITY_ENGINE_SALT", "0"))

_SETTINGS = dict(deadline=None, derandomize=True, database=None,
                 suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])


def check(prober: Any, case: cases.ProbeCase) -> CaseResult:
    result = prober.run_case(case)
    prober.tally["cases"] += 1
    prober.tally["exact"] += int(result.exact)
    # the same rule without eviction, fed the history up to each measured request
    unbounded = Simulator(cache_model=EngineCache(prober.cache_model.block_size))
    first = len(prober.history) - len(result.measurements)
    unbounded.run([as_request(p, i) for i, p in enumerate(prober.history[:first])])
    for i, m in enumerate(result.measurements):
        if unbounded.feed(as_request(prober.history[first + i], first + i)).cache_read != m.reported_cached:
            prober.tally["eviction"] += 1  # a request where eviction changed the engine's figure
    if not result.exact and os.environ.get("FIDELITY_ENGINE_DUMP"):  # debugging aid: the history as sent
        import pickle

        with open(os.environ["FIDELITY_ENGINE_DUMP"], "wb") as fh:
            pickle.dump(prober.history, fh)
    for m in result.measurements:
        assert (m.predicted_prompt, m.predicted_cached) == (m.reported_prompt, m.reported_cached), m.label
    return result


@settings(max_examples=160, **_SETTINGS)
@given(data=st.data())
def test_token_cases(prober: Any, engine: Any, data: st.DataObject) -> None:
    """Shared prefixes at block boundaries and one token either side,
    identical prompts, extensions, divergence in the first block, and
    eviction: a filler that pushes the parent out of the small KV cache."""
    block = engine.settings.block_size
    kind = data.draw(st.sampled_from(["boundary", "identical", "extension", "first-block", "eviction"]), label="kind")
    case = cases.token_case(
        kind,
        data.draw(st.integers(0, 2**31 - 1), label="seed") ^ SALT, block,
        blocks=data.draw(st.integers(0, 16), label="blocks"),
        delta=data.draw(st.sampled_from([-1, 0, 1]), label="delta"),
        tail=data.draw(st.integers(1, 2 * block), label="tail"),
        filler_blocks=data.draw(st.integers(1, ENGINE_BLOCKS - 8), label="filler") if kind == "eviction" else 0,
        model=engine.model)
    check(prober, case)


@settings(max_examples=40, **_SETTINGS)
@given(seed=st.integers(0, 2**31 - 1), system_words=st.integers(1, 800), tools=st.integers(0, 6),
       turns=st.integers(0, 4))
def test_chat_cases(prober: Any, engine: Any, seed: int, system_words: int, tools: int, turns: int) -> None:
    """Chat Completions bodies with a system prompt and tools: the engine's
    chat template and fidelity's ChatML rendering must give the same
    tokens, and the child's cached prefix must be what fidelity predicts."""
    check(prober, cases.chat_case(seed ^ SALT, system_words=system_words, tools=tools, turns=turns, model=engine.model))


@pytest.mark.parametrize("delta", [-1, 0, 1])
@pytest.mark.parametrize("kind", ["boundary", "identical", "extension", "first-block"])
def test_block_edges(prober: Any, engine: Any, kind: str, delta: int) -> None:
    """Exactly at 3 blocks and one token either side, each kind."""
    result = check(prober, cases.token_case(kind, (7 + delta) ^ SALT, engine.settings.block_size, blocks=3, delta=delta,
                                            tail=3, model=engine.model))
    block = engine.settings.block_size
    child = result.measurements[-1]
    if kind == "identical":  # the last-token rule: floor((n-1)/B)*B of n
        assert child.reported_cached == (child.reported_prompt - 1) // block * block
    if kind == "first-block":
        assert child.reported_cached == 0


@pytest.mark.parametrize("variant", compose.variant_names())
def test_fixture_variants(prober: Any, engine: Any, variant: str) -> None:
    """Each bundled composition variant's child after its parent, through
    the chat route (the vllm dialect's bodies)."""
    check(prober, cases.fixture_case("first-turn", variant, model=engine.model))


def test_at_least_200_cases_all_exact(engine: Any, tally: dict[str, int], request: pytest.FixtureRequest) -> None:
    """Runs last: the whole module sent at least 200 cases and every one
    was exact (skipped when a -k / -m selection ran only some)."""
    if request.config.option.keyword or request.config.option.markexpr:
        pytest.skip("a selection ran: the count covers the whole module only")
    assert tally["cases"] >= 200
    assert tally["exact"] == tally["cases"]
    assert tally["eviction"] > 0  # the small KV cache did evict, so the pool replay was tested
