"""An engine with a capacity (the simulator's :class:`fidelity.cache.engine.BlockPool`)
and without one (the prefix store) hold the same tokens: the prompt and the
reply but its last token (:meth:`EngineCache.kept_output`, applied once by the
simulator), so a capacity that holds everything gives the figures of none, and
a smaller one never reads more than none (what the pool holds it was given)."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from fidelity.cache import EngineCache
from fidelity.cache.simulator import SimRequest, Simulator


@st.composite
def engine_streams(draw: st.DrawFn, block: int) -> list[tuple[list[int], list[int]]]:
    """(prompt, reply) pairs: each prompt a drawn stem cut somewhere, or an
    earlier request's prompt and reply cut somewhere, followed by new
    tokens over a tiny alphabet; replies of fresh ids. Example:
    ``[([0, 1, 1, 2, 0], [900, 901]), ([0, 1, 1, 2, 0, 900], [902])]``."""
    stems = draw(st.lists(st.lists(st.integers(0, 2), max_size=12 * block), min_size=1, max_size=3))
    out: list[tuple[list[int], list[int]]] = []
    fresh = 1000
    for _ in range(draw(st.integers(1, 12))):
        if out and draw(st.booleans()):
            prompt, reply = draw(st.sampled_from(out))
            base = prompt + reply
            base = base[: draw(st.integers(len(prompt), len(base)))]  # through any part of the reply
        else:
            stem = draw(st.sampled_from(stems))
            base = stem[: draw(st.integers(0, len(stem)))]
        prompt = base + draw(st.lists(st.integers(0, 2), max_size=4 * block))
        m = draw(st.integers(0, 2 * block))
        out.append((prompt or [1], list(range(fresh, fresh + m))))
        fresh += m
    return out


@given(data=st.data(), block=st.sampled_from([1, 4, 16]))
def test_capacity_for_everything_is_no_capacity(data: st.DataObject, block: int) -> None:
    requests = data.draw(engine_streams(block))
    total = sum(len(p) + len(r) for p, r in requests) + block
    stream = [SimRequest(p, time=float(i), output=r, label=i) for i, (p, r) in enumerate(requests)]
    figures = [(p.prompt, p.cache_read, p.cache_write) for p in Simulator(cache_model=EngineCache(block)).run(stream)]
    roomy = Simulator(cache_model=EngineCache(block, capacity_tokens=total)).run(stream)
    assert [(p.prompt, p.cache_read, p.cache_write) for p in roomy] == figures


@given(data=st.data(), block=st.sampled_from([1, 4, 16]), room=st.integers(0, 40))
def test_a_capacity_never_reads_more_than_none(data: st.DataObject, block: int, room: int) -> None:
    requests = data.draw(engine_streams(block))
    stream = [SimRequest(p, time=float(i), output=r, label=i) for i, (p, r) in enumerate(requests)]
    free = Simulator(cache_model=EngineCache(block)).run(stream)
    tight = Simulator(cache_model=EngineCache(block, capacity_tokens=room * block)).run(stream)
    assert [p.prompt for p in tight] == [p.prompt for p in free]
    assert all(t.cache_read <= f.cache_read for t, f in zip(tight, free))  # type: ignore[operator]
