"""Provider cache models: invariants, documented rules and the real DeepSeek fork,
each asked through the simulator (:func:`fidelity.cache.simulator.simulated`),
the one cache computation."""

from __future__ import annotations

from array import array

import pytest
from hypothesis import given
from hypothesis import strategies as st

from fidelity import cache
from fidelity.cache import PromptTokens
from fidelity.cache.simulator import simulated
from fidelity.errors import InputError, UnknownName


def seq(n: int, start: int = 0) -> tuple[int, ...]:
    return tuple(range(start, start + n))


def fork(shared: int, parent_len: int, child_len: int) -> tuple[PromptTokens, PromptTokens]:
    """A parent and a child sharing exactly ``shared`` leading tokens."""
    parent = seq(parent_len)
    child = parent[:shared] + seq(child_len - shared, start=10**6)
    return PromptTokens(parent, time=0.0), PromptTokens(child, time=10.0)


def outcome(model: cache.CacheModel, earlier: list[PromptTokens], request: PromptTokens) -> tuple[int, int, int]:
    """(read, written, computed) prompt tokens of ``request`` after ``earlier``."""
    p = simulated(model, earlier, request)
    assert p.prompt is not None and p.cache_read is not None and p.cache_write is not None
    return p.cache_read, p.cache_write, p.prompt - p.cache_read


def cached(model: cache.CacheModel, earlier: list[PromptTokens], request: PromptTokens) -> int:
    return outcome(model, earlier, request)[0]


lengths = st.integers(0, 6000)
ALL = cache.names()


@pytest.mark.parametrize("name", ALL)
@given(shared=lengths, parent_len=lengths, child_len=lengths)
def test_outcome_adds_up(name: str, shared: int, parent_len: int, child_len: int) -> None:
    shared = min(shared, parent_len, child_len)
    parent, child = fork(shared, parent_len, child_len)
    read, written, computed = outcome(cache.get(name), [parent], child)
    assert read + computed == child_len
    assert 0 <= read <= shared
    assert 0 <= written <= computed


@pytest.mark.parametrize("name", ["vllm", "sglang", "llama.cpp"])
@given(n=st.integers(1, 5000))
def test_engines_leave_the_last_token(name: str, n: int) -> None:
    same = PromptTokens(seq(n), time=0.0)
    assert cached(cache.get(name), [same], PromptTokens(seq(n), time=1.0)) <= n - 1
    assert cache.get(name).reusable(n, n) <= n - 1


@given(shared=lengths, n=lengths)
def test_units(shared: int, n: int) -> None:
    shared = min(shared, n)
    assert cache.get("vllm").reusable(shared, n) % 16 == 0
    assert cache.get("deepseek").reusable(shared, n) % cache.DEEPSEEK_UNIT == 0
    openai = cache.get("openai").reusable(shared, n)
    assert openai == 0 or (openai >= 1024 and (openai - 1024) % 128 == 0)
    assert cache.get("sglang").reusable(shared, n) == max(0, min(shared, n - 1))


@pytest.mark.parametrize(
    "name, minimum",
    [("openai", 1024), ("gemini", 1024), ("dashscope", 256), ("deepseek", cache.DEEPSEEK_UNIT), ("anthropic", 1024), ("dashscope-explicit", 1024)],
)
@given(shared=st.integers(0, 5000))
def test_below_minimum_gives_zero(name: str, minimum: int, shared: int) -> None:
    got = cache.get(name).reusable(shared, 10_000)
    assert (got == 0) == (shared < minimum)


@pytest.mark.parametrize("name", ["openai", "gemini", "dashscope", "anthropic", "dashscope-explicit"])
def test_ttl_expiry_gives_zero(name: str) -> None:
    model = cache.get(name)
    assert model.ttl is not None
    tokens = seq(5000)
    parent = PromptTokens(tokens, time=0.0, breakpoints=(4000,))
    fresh = PromptTokens(tokens + (1,), time=model.ttl - 1, breakpoints=(4000,))
    stale = PromptTokens(tokens + (1,), time=model.ttl + 1, breakpoints=(4000,))
    assert cached(model, [parent], fresh) > 0
    assert outcome(model, [parent], stale) == (0, 4000 if "anthropic" in name or "explicit" in name else fresh_written(model, 5001), 5001)


def fresh_written(model: cache.CacheModel, n: int) -> int:
    return model.reusable(n, n + 1)


def test_openai_steps_and_real_shape() -> None:
    m = cache.get("openai")
    assert [m.reusable(c, 10**6) for c in (1023, 1024, 1151, 1152, 1300)] == [0, 1024, 1024, 1152, 1280]
    parent, child = fork(2000, 3000, 2900)
    assert outcome(m, [parent], child) == (1920, 896, 980)


def test_vllm_blocks() -> None:
    parent, child = fork(100, 200, 150)
    assert cached(cache.get("vllm"), [parent], child) == 96
    assert cached(cache.get("sglang"), [parent], child) == 100


def test_engines_cache_output_tokens() -> None:
    parent = PromptTokens(seq(100), time=0, output=seq(50, start=100))
    child = PromptTokens(seq(160), time=1)
    assert cached(cache.get("sglang"), [parent], child) >= 149  # the reply is read after the prompt
    assert cached(cache.get("openai"), [parent], child) == 0
    # KV exists for the prompt and every generated token but the last (never fed back)
    assert list(cache.get("sglang").kept_output(seq(50, start=100))) == list(seq(49, start=100))
    assert list(cache.get("deepseek").kept_output(seq(50, start=100))) == list(seq(50, start=100))
    assert list(cache.get("openai").kept_output(seq(50, start=100))) == []


def test_engines_do_not_read_the_last_reply_token() -> None:
    parent = PromptTokens(seq(100), time=0, output=seq(50, start=100))
    assert cached(cache.get("sglang"), [parent], PromptTokens(seq(160), time=1)) == 149


# -- Anthropic ---------------------------------------------------------------


def test_anthropic_breakpoint_hit_and_write() -> None:
    m = cache.get("anthropic")
    first = PromptTokens(seq(3000), time=0, breakpoints=(2500,))
    assert outcome(m, [], first) == (0, 2500, 3000)
    second = PromptTokens(seq(3500), time=60, breakpoints=(2500, 3200))
    assert outcome(m, [first], second) == (2500, 700, 1000)


def test_anthropic_no_breakpoint_means_no_cache() -> None:
    m = cache.get("anthropic")
    first = PromptTokens(seq(3000), time=0)
    assert outcome(m, [first], PromptTokens(seq(3000), time=1)) == (0, 0, 3000)


def test_anthropic_lookback_20_blocks() -> None:
    m = cache.get("anthropic")
    blocks = tuple(range(1100, 1100 + 100 * 30, 100))  # 30 blocks of 100 tokens
    parent = PromptTokens(seq(4200), time=0, breakpoints=(blocks[0],), blocks=blocks)
    # the child's breakpoint is 20 blocks after the entry: still found
    child20 = PromptTokens(seq(4200), time=1, breakpoints=(blocks[20],), blocks=blocks)
    assert cached(m, [parent], child20) == blocks[0]
    # 21 blocks after: beyond the lookback, a miss
    child21 = PromptTokens(seq(4200), time=1, breakpoints=(blocks[21],), blocks=blocks)
    assert cached(m, [parent], child21) == 0


def test_anthropic_lookback_needs_exact_prefix() -> None:
    m = cache.get("anthropic")
    parent = PromptTokens(seq(3000), time=0, breakpoints=(2000,))
    changed = seq(1999) + (-1,) + seq(1000, start=2000)
    child = PromptTokens(changed, time=1, breakpoints=(2000,))
    assert cached(m, [parent], child) == 0


def test_anthropic_per_model_minimum_and_limits() -> None:
    assert cache.get("anthropic", "claude-haiku-4-5-20251001").minimum == 4096
    assert cache.get("anthropic", "claude-sonnet-4-5").minimum == 1024
    short = PromptTokens(seq(3000), time=0, breakpoints=(2000,))
    haiku = cache.get("anthropic", "claude-haiku-4-5")
    assert cached(haiku, [short], PromptTokens(seq(3000), time=1, breakpoints=(2000,))) == 0
    with pytest.raises(InputError, match="at most 4"):
        outcome(haiku, [], PromptTokens(seq(100), breakpoints=(10, 20, 30, 40, 50)))


def test_anthropic_read_refreshes_ttl() -> None:
    m = cache.get("anthropic")
    a = PromptTokens(seq(3000), time=0, breakpoints=(2000,))
    b = PromptTokens(seq(2500), time=250, breakpoints=(2000,))  # hit at 250 s refreshes the entry
    c = PromptTokens(seq(2600), time=500, breakpoints=(2000,))  # 500 s after a, 250 s after b
    assert cached(m, [a, b], c) == 2000
    assert cached(m, [a], c) == 0


def test_anthropic_one_hour_ttl_and_multipliers() -> None:
    m = cache.get("anthropic")
    a = PromptTokens(seq(3000), time=0, breakpoints=(2000,), ttls=(3600.0,))
    assert cached(m, [a], PromptTokens(seq(3000), time=3000, breakpoints=(2000,))) == 2000
    assert (m.read_multiplier, m.write_multipliers[300.0], m.write_multipliers[3600.0]) == (0.1, 1.25, 2.0)
    assert simulated(m, [], a).write_ttls == ((3600.0, 2000),)  # a one-hour write, billed at its own rate


def test_prompt_tokens_validation() -> None:
    with pytest.raises(InputError):
        PromptTokens(seq(10), breakpoints=(11,))
    with pytest.raises(InputError):
        PromptTokens(seq(10), breakpoints=(5,), ttls=(300.0, 300.0))


# -- DeepSeek ----------------------------------------------------------------


def test_deepseek_real_fork_2816() -> None:
    """../shared/real subagent-fork-in-process: the parent's first request has
    2885 prompt tokens (0 cached); the forked child's first request 2913 (97
    missed + 2816 cached). Parent and child share 2884 tokens (the calibrated
    rendering, docs/calibration.md); with the 128-token unit any shared
    prefix of 2816..2884 tokens reproduces 2816 = 22 * 128."""
    m = cache.get("deepseek")
    for shared in (2816, 2850, 2884):
        parent, child = fork(shared, 2885, 2913)
        # only whole units are stored: 2816 of the parent's 2885 tokens
        assert outcome(m, [], parent) == (0, 2816, 2885)
        read, _, computed = outcome(m, [parent], child)
        assert (read, computed) == (2816, 97)
    parent, child = fork(2815, 2885, 2913)
    assert cached(m, [parent], child) == 2688  # one token short of the unit: 21 * 128


def test_deepseek_unit_alternatives_on_real_hits() -> None:
    """If parent and child share all but the last token of the parent's
    prompt (2884), a 64-token unit predicts 2880 while 128 (the default) and
    256 reproduce the real 2816, and also the parent's third request (3137
    tokens, 3072 cached, after a 2974-token request that produced 147 tokens)."""
    parent, child = fork(2884, 2885, 2913)
    assert cached(cache.DeepSeekCache(unit=64), [parent], child) == 2880
    prev = PromptTokens(seq(2974), time=0, output=seq(147, start=2974))
    third = PromptTokens(seq(3120) + seq(17, start=10**6), time=1)
    for model in (cache.get("deepseek"), cache.DeepSeekCache(unit=128), cache.DeepSeekCache(unit=256)):
        assert cached(model, [parent], child) == 2816
        assert cached(model, [prev], third) == 3072


def test_deepseek_no_whole_request_units() -> None:
    """Calibrated rule 2: a whole earlier request (prompt, or prompt and
    reply) is never served past its last whole 128-token unit, and a prefix
    two earlier requests share is not a unit of its own."""
    m = cache.get("deepseek")
    a_b = PromptTokens(seq(1000), time=0)
    a_b_c = PromptTokens(seq(1500), time=1)
    assert outcome(m, [a_b], a_b_c) == (896, 512, 604)  # 7 * 128, not 1000
    a_c = PromptTokens(seq(700) + seq(300, start=10**6), time=1)
    a_d = PromptTokens(seq(700) + seq(300, start=2 * 10**6), time=2)
    assert cached(m, [a_b, a_c], a_d) == 640  # 5 * 128, no common-prefix unit at 700
    assert cached(m, [a_b], a_d) == 640
    with_reply = PromptTokens(seq(1000), time=0, output=seq(24, start=1000))  # 1024 = 8 * 128 stored
    assert cached(m, [with_reply], a_b_c) == 1024


def test_deepseek_reply_is_cached_after_its_prompt() -> None:
    """Calibrated rule 3, on the recorded approval-composer step 2: a
    5441-token prompt and its 872-token reply repeated completely by the
    next prompt; DeepSeek served 6272 = 49 * 128 of the 6313 shared."""
    m = cache.get("deepseek")
    prior = PromptTokens(seq(5441), time=0, output=seq(872, start=5441))
    nxt = PromptTokens(seq(6313) + seq(200, start=10**6), time=1)
    assert outcome(m, [prior], nxt) == (6272, 128, 241)
    without_reply = PromptTokens(seq(5441), time=0)
    assert cached(m, [without_reply], nxt) == 5376  # 42 * 128: the prompt alone
    diverged = PromptTokens(seq(5441) + seq(900, start=10**6), time=1)  # a different continuation
    assert cached(m, [prior], diverged) == 5376


@pytest.mark.parametrize("name", ["deepseek", "openai"])
def test_a_request_sent_later_is_not_in_the_cache_yet(name: str) -> None:
    later = PromptTokens(seq(5441), time=5, output=seq(872, start=5441))
    assert cached(cache.get(name), [later], PromptTokens(seq(6313), time=1)) == 0


@given(shared=st.integers(0, 4000), prompt=st.integers(1, 3000), reply=st.integers(0, 2000))
def test_deepseek_hits_are_whole_units_of_prompt_and_reply(shared: int, prompt: int, reply: int) -> None:
    stored = seq(prompt) + seq(reply, start=prompt)
    shared = min(shared, len(stored))
    prior = PromptTokens(seq(prompt), time=0, output=seq(reply, start=prompt))
    request = PromptTokens(stored[:shared] + seq(50, start=10**6), time=1)
    read = cached(cache.get("deepseek"), [prior], request)
    assert read == shared // 128 * 128
    assert read % cache.DEEPSEEK_UNIT == 0


def test_deepseek_unit_is_one_named_constant() -> None:
    assert cache.DEEPSEEK_UNIT == 128
    assert cache.get("deepseek").unit == cache.DEEPSEEK_UNIT
    assert cache.get("deepseek").reusable(1000, 5000) == 1000 // cache.DEEPSEEK_UNIT * cache.DEEPSEEK_UNIT
    assert "https://api-docs.deepseek.com/guides/kv_cache" in cache.get("deepseek").doc
    assert "docs/calibration.md" in cache.get("deepseek").doc


# -- DashScope, Gemini, registry ---------------------------------------------


def test_dashscope_modes() -> None:
    imp, exp = cache.get("dashscope"), cache.get("dashscope-explicit")
    assert (imp.read_multiplier, imp.write_multiplier, imp.minimum) == (0.2, 1.0, 256)
    assert (exp.read_multiplier, exp.write_multiplier, exp.minimum, exp.lookback) == (0.1, 1.25, 1024, 20)
    parent, child = fork(300, 400, 400)
    assert cached(imp, [parent], child) == 300


def test_gemini_per_model_minimum() -> None:
    # the October 2026 page: 2,048 for Gemini 2.5 (May 2026: 4,096 Pro, 1,024 Flash), 4,096 for 3.1 Pro
    assert cache.get("gemini", "gemini-2.5-pro").minimum == 2048
    assert cache.minimums.minimum("gemini", "gemini-2.5-pro", on="2026-06-01") == 4096
    assert cache.minimums.minimum("gemini", "gemini-2.5-flash", on="2026-06-01") == 1024
    assert cache.get("gemini", "gemini-3.1-pro-preview").minimum == 4096
    parent, child = fork(3000, 4000, 4000)
    assert cached(cache.get("gemini", "gemini-3.1-pro-preview"), [parent], child) == 0
    assert cached(cache.get("gemini", "gemini-2.5-pro"), [parent], child) == 3000


def test_registry() -> None:
    assert set(ALL) >= {"openai", "anthropic", "deepseek", "gemini", "dashscope", "dashscope-explicit", "vllm", "sglang", "llama.cpp"}
    assert cache.for_provider("llamacpp").name == "llama.cpp"
    for name in ALL:
        m = cache.get(name)
        assert m.doc and "http" in m.doc, name
        assert 0.0 <= m.read_multiplier <= 1.0 <= m.write_multiplier
    with pytest.raises(UnknownName):
        cache.get("nope")


@given(a=st.lists(st.integers(0, 3), max_size=300), b=st.lists(st.integers(0, 3), max_size=300))
def test_common_prefix_matches_naive(a: list[int], b: list[int]) -> None:
    n = 0
    while n < min(len(a), len(b)) and a[n] == b[n]:
        n += 1
    assert cache.common_prefix(tuple(a), tuple(b)) == n


def test_common_prefix_long() -> None:
    a = seq(100_000)
    assert cache.common_prefix(a, a[:77_777] + (-1,)) == 77_777


@given(a=st.lists(st.integers(-(2**63), 2**63 - 1), max_size=200),
       b=st.lists(st.integers(-(2**63), 2**63 - 1), max_size=200), shared=st.integers(0, 200))
def test_common_prefix_on_packed_ids_matches_naive(a: list[int], b: list[int], shared: int) -> None:
    b = a[:shared] + b  # often a long shared run, then 64-bit ids that may differ in any byte
    n = 0
    while n < min(len(a), len(b)) and a[n] == b[n]:
        n += 1
    assert cache.common_prefix(array("q", a), array("q", b)) == n
    assert cache.common_prefix(a, array("q", b)) == cache.common_prefix(tuple(a), b) == n


def test_common_prefix_across_windows() -> None:
    a = array("q", range(400_000))  # 3.2 MB packed: several 1 MB windows
    for at in (0, 131_071, 131_072, 131_073, 399_999):
        b = array("q", a)
        b[at] = -1
        assert cache.common_prefix(a, b) == at
        b[at] = a[at] + (1 << 56)  # differs only in the last (high) byte
        assert cache.common_prefix(a, b) == at
    assert cache.common_prefix(a, a[:250_000]) == 250_000
    assert cache.common_prefix(a, a) == 400_000


def test_prompt_tokens_pack_ids_and_keep_value_semantics() -> None:
    p = PromptTokens((1, 2, 3), output=[4, 5], breakpoints=[3])
    assert isinstance(p.tokens, array) and p.tokens.typecode == "q" and p.tokens.tolist() == [1, 2, 3]
    assert isinstance(p.output, array) and p.output.tolist() == [4, 5] and p.breakpoints == (3,)
    assert len(p) == 3
    q = PromptTokens(array("q", [1, 2, 3]), output=array("q", [4, 5]), breakpoints=(3,))
    assert p == q and hash(p) == hash(q) and len({p, q}) == 1  # hashable, by value
    assert PromptTokens([1, 2, 3]) != PromptTokens([1, 2, 4])
    assert PromptTokens(range(3)).tokens.tolist() == [0, 1, 2]
    ids = array("q", [7, 8])
    assert PromptTokens(ids).tokens is ids  # an array('q') is adopted, not copied
    assert PromptTokens(array("i", [7, 8])).tokens.typecode == "q"  # other typecodes are packed as 'q'
    assert PromptTokens((2**32 - 1, -(10**7))).tokens.tolist() == [2**32 - 1, -(10**7)]  # CRC-32 ids, markers
