"""The cache simulator: state over a stream of requests.

Properties (hypothesis, ``ci`` profile: 200 examples each unless a test says
otherwise): a prefix cache reads exactly the rule applied to the longest
live common prefix (so never more); a breakpoint moved forward keeps
reading what the earlier breakpoint wrote; results depend on request times,
not on the order requests are listed in.
"""

from __future__ import annotations

import random

import pytest
from hypothesis import given
from hypothesis import strategies as st

from fidelity.cache._base import common_prefix
from fidelity.cache.anthropic_blocks import strip_markers
from fidelity.cache.prompts import cache_prompt
from fidelity.cache.simulator import PrefixStore, SimRequest, Simulator
from fidelity.errors import InputError

# --------------------------------------------------------------------------- strategies

@st.composite
def request_streams(draw: st.DrawFn, max_requests: int = 8) -> list[tuple[list[int], float]]:
    """Requests built from a few shared stems and random tails (tiny
    alphabet, so prefixes collide often), with non-decreasing times."""
    stems = draw(st.lists(st.lists(st.integers(0, 3), min_size=0, max_size=300), min_size=1, max_size=3))
    n = draw(st.integers(1, max_requests))
    t = 0.0
    out = []
    for _ in range(n):
        stem = stems[draw(st.integers(0, len(stems) - 1))]
        cut = draw(st.integers(0, len(stem)))
        tail = draw(st.lists(st.integers(0, 3), max_size=200))
        t += draw(st.sampled_from([0.0, 1.0, 30.0, 200.0, 400.0]))
        toks = stem[:cut] + tail
        if toks:
            out.append((toks, t))
    return out or [([1], 0.0)]


def _oracle(model, stream, i) -> int:
    toks, now = stream[i]
    best = 0
    for prev, t in stream[:i]:
        if model.ttl is None or t + model.ttl >= now:
            best = max(best, common_prefix(prev, toks))
    return min(len(toks), model.reusable(best, len(toks))) if best else 0


# --------------------------------------------------------------------------- prefix caches

@pytest.mark.parametrize("name,params", [
    ("openai", {"minimum": 64, "step": 16, "ttl": 300.0}),
    ("deepseek", {"unit": 8}),
    ("gemini", {"minimum": 10}),
    ("vllm", {"block_size": 16}),
])
@given(stream=request_streams())
def test_prefix_read_is_the_rule_on_the_longest_live_prefix(name, params, stream) -> None:
    sim = Simulator(name, **params)
    for i, (toks, t) in enumerate(stream):
        pred = sim.feed(SimRequest(toks, time=t, label=i))
        expected = _oracle(sim.model, stream, i)
        assert pred.cache_read == expected  # never longer than the longest live match, and no shorter
        assert pred.prompt == len(toks)
        if pred.cache_read:
            parent = stream[pred.parent][0]
            assert common_prefix(parent, toks) >= pred.cache_read


@given(stream=request_streams(max_requests=10), seed=st.integers(0, 2**16))
def test_results_depend_on_time_not_listing_order(stream, seed) -> None:
    labelled = [SimRequest(t, time=time + i * 1e-3, label=i) for i, (t, time) in enumerate(stream)]
    shuffled = labelled[:]
    random.Random(seed).shuffle(shuffled)
    a = {r.label: p for r, p in zip(labelled, Simulator("openai", minimum=64, step=16).run(labelled))}
    b = {r.label: p for r, p in zip(shuffled, Simulator("openai", minimum=64, step=16).run(shuffled))}
    assert a == b


def test_capacity_evicts_least_recently_used() -> None:
    store_sim = Simulator("vllm", block_size=4, capacity_tokens=40)  # the engine's block pool
    a = list(range(100, 132))
    b = list(range(200, 232))
    store_sim.feed(SimRequest(a, label="a"))
    store_sim.feed(SimRequest(b, label="b"))  # 16 blocks for 10 places: a's last 6 go, its tail first
    assert store_sim.feed(SimRequest(a + [1], label="a2")).cache_read == 8
    assert store_sim.feed(SimRequest(a + [1], label="a3")).cache_read == 32


def test_prefix_store_walk_is_shared_across_branches() -> None:
    store = PrefixStore(unit=4)
    from array import array
    x = array("q", range(40))
    y = array("q", list(range(20)) + [99] * 20)
    store.feed(x, (), 0.0, "x")
    store.feed(y, (), 0.0, "y")
    assert store.longest(array("q", list(range(20)) + [99] * 8 + [5]), 1.0) == (28, "y")
    assert store.longest(array("q", range(37)), 1.0) == (37, "x")


def test_predict_does_not_change_state() -> None:
    sim = Simulator("openai")
    sim.feed(SimRequest(range(3000), time=0.0, label="p"))
    child = SimRequest(list(range(2500)) + [7] * 10, time=1.0, label="c")
    assert sim.predict(child) == sim.predict(child)
    assert sim.predict(child).cache_read == 2432


def test_ttl_expires_and_read_refreshes() -> None:
    sim = Simulator("openai")  # ttl 600 s
    sim.feed(SimRequest(range(2000), time=0.0, label="a"))
    assert sim.feed(SimRequest(range(2000), time=500.0, label="b")).cache_read == 1920
    assert sim.feed(SimRequest(range(2000), time=1050.0, label="c")).parent == "b"  # b refreshed it
    assert sim.feed(SimRequest(range(2000), time=5000.0, label="d")).cache_read == 0


def test_partition_key_separates() -> None:
    sim = Simulator("openai")
    sim.feed(SimRequest(range(2000), key="k1"))
    assert sim.feed(SimRequest(range(2000), key="k2")).cache_read == 0
    assert sim.feed(SimRequest(range(2000), key="k1")).cache_read == 1920


def test_out_of_order_feed_is_refused() -> None:
    sim = Simulator("openai")
    sim.feed(SimRequest([1], time=10.0))
    with pytest.raises(InputError):
        sim.feed(SimRequest([1], time=5.0))


# --------------------------------------------------------------------------- explicit breakpoints

@st.composite
def conversations(draw: st.DrawFn) -> list[list[int]]:
    """Turns of one conversation: each adds 1..8 blocks of 1..400 tokens."""
    turns = draw(st.integers(2, 6))
    blocks: list[int] = [draw(st.integers(1, 3000))]
    out = []
    for _ in range(turns):
        blocks = blocks + [draw(st.integers(1, 400)) for _ in range(draw(st.integers(1, 8)))]
        out.append(list(blocks))
    return out


@given(conv=conversations(), gap=st.sampled_from([1.0, 60.0, 299.0]))
def test_moving_breakpoint_keeps_what_earlier_breakpoints_wrote(conv, gap) -> None:
    """Claude Code's pattern: one breakpoint at the end of each request,
    moved forward each turn. Each request reads at least what the previous
    one wrote (when it reached the minimum), never more than it shares."""
    sim = Simulator("anthropic", "claude-sonnet-4-5")
    sizes_prev: list[int] | None = None
    prev_end = 0
    rng = random.Random(len(conv))
    base = [rng.randrange(1 << 30) for _ in range(sum(conv[-1]))]
    for turn, sizes in enumerate(conv):
        ends = []
        total = 0
        for s in sizes:
            total += s
            ends.append(total)
        req = SimRequest(base[:total], time=turn * gap, breakpoints=(total,), blocks=tuple(ends), label=turn)
        pred = sim.feed(req)
        if sizes_prev is not None:
            assert pred.cache_read <= prev_total_shared(base, prev_end, total)
            if prev_end >= sim.model.minimum:
                assert pred.cache_read >= prev_end
                assert pred.parent == turn - 1
        sizes_prev, prev_end = sizes, total


def prev_total_shared(base: list[int], prev_end: int, total: int) -> int:
    return min(prev_end, total) if prev_end else total


def test_lookback_is_twenty_blocks() -> None:
    sim = Simulator("anthropic", "claude-sonnet-4-5")
    toks = list(range(5000))
    sim.feed(SimRequest(toks[:2000], time=0, breakpoints=(2000,), blocks=(2000,), label="a"))
    ends = tuple(range(2000, 2000 + 21 * 10 + 1, 10))  # 21 more blocks: the entry is 21 blocks back
    far = SimRequest(toks[: ends[-1]], time=1, breakpoints=(ends[-1],), blocks=ends, label="far")
    assert sim.predict(far).cache_read == 0
    near = SimRequest(toks[: ends[-2]], time=1, breakpoints=(ends[-2],), blocks=ends[:-1], label="near")
    assert sim.predict(near).cache_read == 2000


def test_one_hour_entry_outlives_five_minutes() -> None:
    sim = Simulator("anthropic", "claude-sonnet-4-5")
    toks = list(range(3000))
    first = sim.feed(SimRequest(toks, time=0, breakpoints=(3000,), ttls=(3600.0,), blocks=(3000,)))
    assert first.write_ttls == ((3600.0, 3000),)
    assert sim.feed(SimRequest(toks, time=1800, breakpoints=(3000,), blocks=(3000,))).cache_read == 3000
    sim2 = Simulator("anthropic", "claude-sonnet-4-5")
    sim2.feed(SimRequest(toks, time=0, breakpoints=(3000,), blocks=(3000,)))
    assert sim2.feed(SimRequest(toks, time=1800, breakpoints=(3000,), blocks=(3000,))).cache_read == 0


def test_minimum_per_model() -> None:
    toks = list(range(3000))
    for model, read in (("claude-haiku-4-5", 0), ("claude-sonnet-4-5", 3000)):
        sim = Simulator("anthropic", model)
        sim.feed(SimRequest(toks, time=0, breakpoints=(3000,), blocks=(3000,)))
        assert sim.feed(SimRequest(toks, time=1, breakpoints=(3000,), blocks=(3000,))).cache_read == read


# --------------------------------------------------------------------------- bodies

def _body(messages, **extra) -> bytes:
    import json
    return json.dumps({"max_tokens": 10, "messages": messages, "model": "claude-sonnet-4-5", **extra},
                      separators=(",", ":")).encode()


LONG = "word " * 2000


def test_moved_marker_is_not_a_content_change() -> None:
    cc = {"type": "ephemeral"}
    a = _body([{"role": "user", "content": [{"type": "text", "text": LONG, "cache_control": cc}]}])
    b = _body([{"role": "user", "content": LONG},
               {"role": "assistant", "content": "ok"},
               {"role": "user", "content": [{"type": "text", "text": "more", "cache_control": cc}]}])
    sim = Simulator("anthropic", "claude-sonnet-4-5")
    pa = cache_prompt(a, label="a", dialect="anthropic-messages", time=0.0)
    pb = cache_prompt(b, label="b", dialect="anthropic-messages", time=1.0)
    first = sim.feed(pa.request)
    second = sim.feed(pb.request)
    assert first.cache_write == len(pa.request.tokens) and second.cache_read == first.cache_write
    assert second.parent == "a"


def test_tool_choice_invalidates_messages_only() -> None:
    cc = {"type": "ephemeral"}
    system = [{"type": "text", "text": LONG, "cache_control": cc}]
    msgs = [{"role": "user", "content": [{"type": "text", "text": LONG, "cache_control": cc}]}]
    a = cache_prompt(_body(msgs, system=system, tool_choice={"type": "auto"}), dialect="anthropic-messages", time=0.0, label="a")
    b = cache_prompt(_body(msgs, system=system, tool_choice={"type": "any"}), dialect="anthropic-messages", time=1.0, label="b")
    sim = Simulator("anthropic", "claude-sonnet-4-5")
    sim.feed(a.request)
    read = sim.feed(b.request).cache_read
    assert 0 < read < len(b.request.tokens)
    assert read == a.request.breakpoints[0]  # the system breakpoint, not the messages one


def test_top_level_automatic_caching() -> None:
    msgs = [{"role": "user", "content": LONG}]
    a = cache_prompt(_body(msgs, cache_control={"type": "ephemeral", "ttl": "1h"}), dialect="anthropic-messages", time=0.0)
    assert a.request.breakpoints == (len(a.request.tokens),) and a.request.ttls == (3600.0,)


def test_strip_markers() -> None:
    assert strip_markers(b'{"type":"text","text":"x","cache_control":{"type":"ephemeral"}}') == \
        b'{"type":"text","text":"x"}'
    assert strip_markers(b'{"cache_control":{"type":"ephemeral"},"a":1}') == b'{"a":1}'
    assert strip_markers(b'{"text":"\\"cache_control\\": 1"}') == b'{"text":"\\"cache_control\\": 1"}'


def test_cache_prompt_marks_anthropic_blocks_and_breakpoints() -> None:
    cc = {"type": "ephemeral"}
    body = _body([{"role": "user", "content": [{"type": "text", "text": LONG}, {"type": "text", "text": "tail", "cache_control": cc}]}],
                 system=[{"type": "text", "text": "sys " * 50, "cache_control": cc}])
    cp = cache_prompt(body, dialect="anthropic-messages")
    assert cp.estimated
    # one block end per system block and per content block, the last at the prompt's end
    assert len(cp.request.blocks) == 3 and cp.request.blocks[-1] == len(cp.request.tokens)
    assert cp.request.breakpoints == (cp.request.blocks[0], cp.request.blocks[2])
