"""The segment-stamped prefix store and the fast breakpoint store give the
predictions of straightforward references, exactly.

The references below are the plain algorithms the fast stores stand for: a
trie walked block by block with a last-use stamp on every node (prefix
caches); entries compared with
:func:`fidelity.cache._base.common_prefix` one by one (explicit
breakpoints). Properties (hypothesis, ``ci`` profile: 200 examples each):
on drawn request streams with shared stems, forks, shorter retries, TTL
gaps, unknown times, replies kept after the prompt and partition keys,
:meth:`Simulator.feed` and :meth:`Simulator.predict`
give the same :class:`Prediction` sequence (``parent``, ``nearest`` and
``write_ttls`` included) through either store.
"""

from __future__ import annotations

from array import array
from collections.abc import Hashable
from dataclasses import dataclass
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from fidelity.cache._base import common_prefix
from fidelity.cache.prefix_store import PrefixStore
from fidelity.cache.simulator import SimRequest, Simulator

# --------------------------------------------------------------------------- references


class RefPrefixStore:
    """A block trie, walked one block at a time, every node stamped with
    its last use (time, order, label) on every request that uses it."""

    def __init__(self, unit: int, ttl: float | None = None) -> None:
        self.unit, self.ttl = unit, ttl
        self.children: dict[tuple[int, bytes], int] = {}
        self.kids: dict[int, list[int]] = {0: []}
        self.key: dict[int, bytes] = {}
        self.time: dict[int, float] = {}
        self.seq: dict[int, int] = {}
        self.label: dict[int, Hashable] = {}
        self.clock = 0
        self.next_id = 1

    def _path(self, b: bytes) -> list[int]:
        u = self.unit * 8
        node, path = 0, []
        for i in range(len(b) // u):
            child = self.children.get((node, b[i * u : (i + 1) * u]))
            if child is None:
                break
            path.append(child)
            node = child
        return path

    def _alive(self, n: int, now: float | None) -> bool:
        return self.ttl is None or now is None or self.time[n] + self.ttl >= now

    def longest(self, tokens: Any, now: float | None) -> tuple[int, Hashable | None]:
        b = bytes(tokens)
        path = self._path(b)
        k = 0
        while k < len(path) and self._alive(path[k], now):
            k += 1
        node = path[k - 1] if k else 0
        best = node if k else None
        depth = k * self.unit
        rest = b[depth * 8 : (depth + self.unit) * 8]
        extra = 0
        if rest:
            for c in self.kids[node]:
                if not self._alive(c, now):
                    continue
                key = self.key[c]
                n = 0
                while (n + 1) * 8 <= min(len(key), len(rest)) and key[n * 8 : (n + 1) * 8] == rest[n * 8 : (n + 1) * 8]:
                    n += 1
                # the longest; of equally long ones, the latest used
                if n > extra or (n == extra and n and self.seq[c] > self.seq[best]):  # type: ignore[index]
                    extra, best = n, c
        if best is None:
            return 0, None
        return depth + extra, self.label[best]

    def _new(self, parent: int, key: bytes) -> int:
        n = self.next_id
        self.next_id += 1
        self.key[n], self.kids[n] = key, []
        self.kids[parent].append(n)
        if len(key) == self.unit * 8:
            self.children[(parent, key)] = n
        return n

    def store(self, tokens: Any, now: float | None, label: Hashable) -> None:
        self.clock += 1
        b = bytes(tokens)
        u = self.unit * 8
        path = self._path(b)
        node = path[-1] if path else 0
        for i in range(len(path), len(b) // u):
            node = self._new(node, b[i * u : (i + 1) * u])
            path.append(node)
        tail = b[(len(b) // u) * u :]
        if tail:
            leaf = next((c for c in self.kids[node] if self.key[c] == tail), None)
            path.append(leaf if leaf is not None else self._new(node, tail))
        for n in path:
            self.time[n] = float("-inf") if now is None else now
            self.seq[n] = self.clock
            self.label[n] = label

    def feed(self, tokens: Any, output: Any, now: float | None, label: Hashable) -> tuple[int, Hashable | None]:
        found = self.longest(tokens, now)
        self.store(bytes(tokens) + bytes(output), now, label)
        return found


@dataclass
class RefEntry:
    """One explicit-cache entry: who wrote it, when it was last used."""

    tokens: Any
    length: int
    last_used: float | None
    ttl: float
    label: Hashable


class RefBreakpointStore:
    """Explicit-breakpoint entries by prefix length, compared one by one."""

    def __init__(self, lookback: int = 20) -> None:
        self.lookback = lookback
        self.entries: dict[int, list[RefEntry]] = {}

    @staticmethod
    def _alive(e: RefEntry, now: float | None) -> bool:
        return now is None or e.last_used is None or now - e.last_used <= e.ttl

    def hit(self, req: SimRequest, now: float | None) -> RefEntry | None:
        ends = sorted(set(req.blocks) | set(req.breakpoints))
        cands: set[int] = set()
        for bp in req.breakpoints:
            cands.update([e for e in ends if e <= bp][-(self.lookback + 1):])
        for pos in sorted(cands, reverse=True):
            for e in self.entries.get(pos, ()):
                if self._alive(e, now) and common_prefix(e.tokens, req.tokens) >= pos:
                    return e
        return None

    def write(self, req: SimRequest, pos: int, ttl: float, now: float | None, label: Hashable) -> bool:
        bucket = self.entries.setdefault(pos, [])
        for e in bucket:
            if common_prefix(e.tokens, req.tokens) >= pos:
                fresh = not self._alive(e, now)
                e.tokens, e.last_used, e.label = req.tokens, now, label
                e.ttl = ttl if fresh else max(e.ttl, ttl)
                return fresh
        bucket.append(RefEntry(req.tokens, pos, now, ttl, label))
        if now is not None:
            bucket[:] = [e for e in bucket if self._alive(e, now)]
        return True

    def done(self) -> None:
        """Nothing held between calls."""


def _reference(sim: Simulator) -> Simulator:
    """``sim`` with its stores made by the references."""
    model = sim.model

    def make(key: Hashable, create: bool) -> Any:
        store = sim._stores.get(key)  # noqa: SLF001
        if store is None and create:
            store = (RefBreakpointStore(getattr(model, "lookback", 20)) if sim.explicit
                     else RefPrefixStore(sim._unit, model.ttl))  # noqa: SLF001
            sim._stores[key] = store  # noqa: SLF001
        return store

    sim._store = make  # type: ignore[method-assign]  # noqa: SLF001
    return sim


# --------------------------------------------------------------------------- strategies

@st.composite
def streams(draw: st.DrawFn, explicit: bool = False) -> list[tuple[str, SimRequest]]:
    """("feed" | "predict", request): a few stems over a tiny alphabet (so
    blocks collide), each request a stem cut somewhere plus a random tail
    (a continuation, a fork, a shorter retry), times that jump past TTLs or
    stay unknown, replies, and two partition keys."""
    stems = draw(st.lists(st.lists(st.integers(0, 2), max_size=160), min_size=1, max_size=3))
    n = draw(st.integers(1, 14))
    t = 0.0
    out: list[tuple[str, SimRequest]] = []
    prev: list[int] = []
    unknown = draw(st.booleans())
    for i in range(n):
        how = draw(st.sampled_from(["grow", "grow", "stem", "retry"]))
        if how == "grow" and prev:
            toks = prev + draw(st.lists(st.integers(0, 2), max_size=60))
        elif how == "retry" and prev:
            toks = prev[: draw(st.integers(0, len(prev)))]
        else:
            stem = draw(st.sampled_from(stems))
            toks = stem[: draw(st.integers(0, len(stem)))] + draw(st.lists(st.integers(0, 2), max_size=60))
        if not toks:
            toks = [1]
        t += draw(st.sampled_from([0.0, 1.0, 30.0, 200.0, 400.0]))
        time = None if unknown and draw(st.booleans()) else t
        output = draw(st.lists(st.integers(0, 2), max_size=20))
        key = draw(st.sampled_from(["", "", "k"]))
        kw: dict[str, Any] = {}
        if explicit:
            ends = sorted(set(draw(st.lists(st.integers(1, len(toks)), max_size=30))) | {len(toks)})
            bps = sorted(set(draw(st.lists(st.sampled_from(ends), min_size=1, max_size=4))))
            # block ends as a caller may give them: in order, or not, with repeats, or without
            # the breakpoints among them
            blocks = draw(st.sampled_from([ends, ends[::-1], ends + ends[:3], [e for e in ends if e not in bps],
                                           [e for e in ends for _ in (0, 1)]]))
            kw = {"blocks": tuple(blocks), "breakpoints": tuple(draw(st.permutations(bps)))}
            if draw(st.booleans()):
                kw["ttls"] = tuple(draw(st.sampled_from([300.0, 3600.0])) for _ in bps)
        req = SimRequest(array("q", toks), time=time, output=output, key=key, label=f"r{i}", **kw)
        out.append((draw(st.sampled_from(["feed", "feed", "feed", "predict"])), req))
        prev = toks
    return out


def _run(sim: Simulator, stream: list[tuple[str, SimRequest]]) -> list[tuple[Any, ...]]:
    out = []
    for how, req in stream:
        p = sim.feed(req) if how == "feed" else sim.predict(req)
        out.append((how, p, p.nearest, p.write_ttls))
    return out


PREFIX_MODELS = [
    ("openai", {"minimum": 16, "step": 4, "ttl": 300.0}),
    ("deepseek", {"unit": 8}),  # keeps the reply after the prompt
    ("gemini", {"minimum": 10}),
    ("vllm", {"block_size": 4}),
    ("vllm", {"block_size": 1}),
]


@pytest.mark.parametrize("name,params", PREFIX_MODELS)
@given(stream=streams())
def test_prefix_store_matches_reference(name: str, params: dict[str, Any], stream: list[tuple[str, SimRequest]]) -> None:
    assert _run(Simulator(name, **params), stream) == _run(_reference(Simulator(name, **params)), stream)


@pytest.mark.parametrize("name,params", [PREFIX_MODELS[0], PREFIX_MODELS[1], PREFIX_MODELS[3]])
@given(stream=streams(), keep=st.integers(1, 3), expire=st.booleans())
def test_records_out_of_memory_match_reference(name: str, params: dict[str, Any], keep: int, expire: bool,
                                               stream: list[tuple[str, SimRequest]]) -> None:
    """One to three requests' ids in memory, the others in the file and read
    back when a walk needs them (with expiry dropping what no segment
    names): the same answers as the reference."""
    sim = Simulator(name, expire=expire, records_in_memory=keep, **params)
    assert _run(sim, stream) == _run(_reference(Simulator(name, **params)), stream)


@pytest.mark.parametrize("expire", [False, True])
@pytest.mark.parametrize("name,params", [PREFIX_MODELS[0], PREFIX_MODELS[1], PREFIX_MODELS[3]])
@given(stream=streams())
def test_many_children_sorted_match_reference(name: str, params: dict[str, Any], expire: bool,
                                              stream: list[tuple[str, SimRequest]]) -> None:
    """The search among many children sorted by their bytes (past
    ``_MANY``; a drawn stream rarely gives one node 16) on every node, kept
    in step as children come (new blocks, leaves) and go (expiry, dropped leaves):
    the same results as the reference, ties between equally long matches
    included."""
    from fidelity.cache import prefix_store

    many = prefix_store._MANY
    prefix_store._MANY = 0
    try:
        got = _run(Simulator(name, expire=expire, **params), stream)
    finally:
        prefix_store._MANY = many
    assert got == _run(_reference(Simulator(name, **params)), stream)


@pytest.mark.parametrize("clash", ["all", "some"])
@pytest.mark.parametrize("name,params", [PREFIX_MODELS[1], PREFIX_MODELS[3], PREFIX_MODELS[4]])
@given(stream=streams(), keep=st.sampled_from([None, 1]), sort=st.booleans())
def test_clashing_block_hashes_match_reference(name: str, params: dict[str, Any], clash: str, keep: int | None,
                                               sort: bool, stream: list[tuple[str, SimRequest]]) -> None:
    """Full blocks are keyed by the hash of their bytes: with a hash that
    gives every block the same value (or one of two), siblings clash, the
    later ones are keyed by their bytes, and a walk that the hash leads to
    another block's node finds its own: the same answers as the reference,
    with records in the file and children sorted or not."""
    from fidelity.cache import prefix_store

    saved = prefix_store._hash, prefix_store._MANY
    prefix_store._hash = (lambda b: 7) if clash == "all" else (lambda b: b[0] & 1)
    if sort:
        prefix_store._MANY = 0
    try:
        got = _run(Simulator(name, records_in_memory=keep, **params), stream)
    finally:
        prefix_store._hash, prefix_store._MANY = saved
    assert got == _run(_reference(Simulator(name, **params)), stream)


def test_clashing_hashes_are_told_apart() -> None:
    """Two sessions whose blocks all hash alike: each finds its own blocks,
    and the second one's first block is keyed by its bytes."""
    from fidelity.cache import prefix_store

    saved = prefix_store._hash
    prefix_store._hash = lambda b: 0
    try:
        store = PrefixStore(unit=4)
        a, b = array("q", range(100, 116)), array("q", range(200, 216))
        store.feed(a, (), 1.0, "a")
        store.feed(b, (), 2.0, "b")
        assert len(store._clash) == 1  # noqa: SLF001 -- b's first block; the rest hang under new parents
        assert store.longest(a, 3.0) == (16, "a")
        assert store.longest(b, 3.0) == (16, "b")
        assert store.longest(array("q", [*range(200, 208), 0, 0, 0, 0]), 3.0) == (8, "b")
        assert store.longest(array("q", range(300, 316)), 3.0) == (0, None)
    finally:
        prefix_store._hash = saved


@pytest.mark.parametrize("name,params", PREFIX_MODELS[:3])
@given(stream=streams())
def test_expiring_store_matches_reference(name: str, params: dict[str, Any],
                                          stream: list[tuple[str, SimRequest]]) -> None:
    """Dead entries dropped as time moves on (``expire``: the scan's
    simulators; the drawn times never go back): the same answers."""
    sim = Simulator(name, expire=True, **params)
    assert _run(sim, stream) == _run(_reference(Simulator(name, **params)), stream)


def test_expiring_store_drops_what_died() -> None:
    """A first block that is new with every request (a timestamp at the top)
    leaves one child per request at the root; with ``expire`` only those
    still alive stay, and a question about an earlier time is refused."""
    from fidelity.errors import InputError

    def run(expire: bool) -> tuple[Simulator, list[Any]]:
        sim = Simulator("openai", minimum=16, step=4, ttl=300.0, expire=expire)
        got = [sim.feed(SimRequest(array("q", [1000 + i] + [7] * 40), time=100.0 * i, label=i)) for i in range(50)]
        return sim, [(p.prompt, p.cache_read, p.nearest) for p in got]

    kept, lazy = run(True), run(False)
    assert kept[1] == lazy[1]
    store = next(iter(kept[0]._stores.values()))  # noqa: SLF001
    assert len(store._kids[store.ROOT]) <= 4 < 50 == len(next(iter(lazy[0]._stores.values()))._kids[0])  # noqa: SLF001
    with pytest.raises(InputError):
        kept[0].predict(SimRequest(array("q", [7] * 40), time=0.0))


@pytest.mark.parametrize("params", [{"minimum": 8}, {"minimum": 40, "ttl": 300.0}, {"minimum": 8, "lookback": 3}])
@given(stream=streams(explicit=True))
def test_breakpoint_store_matches_reference(params: dict[str, Any], stream: list[tuple[str, SimRequest]]) -> None:
    assert _run(Simulator("anthropic", **params), stream) == _run(_reference(Simulator("anthropic", **params)), stream)


def test_append_only_session_keeps_one_request_and_few_segments() -> None:
    """Each request re-sends the last and adds a turn: the store holds only
    the latest request's bytes and its Python steps stay flat per request."""
    store = PrefixStore(unit=16)
    toks = array("q")
    steps = []
    for i in range(200):
        toks = toks + array("q", range(i * 1000, i * 1000 + 50))
        before = store.steps
        store.feed(toks, (), float(i), i)
        steps.append(store.steps - before)
    assert sum(d is not None for d in store._data) == 1  # noqa: SLF001
    assert max(steps[10:]) <= 6  # look-ups + new blocks (50 tokens: 3 to 4 blocks of 16)
    assert store.longest(toks, 200.0) == (len(toks), 199)
    # each turn's partial last block is dropped when the next turn's block
    # starts with it: 10,000 tokens fill whole blocks, and no leaf is left
    def live(st: PrefixStore) -> list[Any]:
        return [st._key[v][1] for v in range(1, len(st._key)) if st._seg[v] >= 0]  # noqa: SLF001

    assert len(live(store)) == 10_000 // 16 and all(type(k) is int for k in live(store))
    store.feed(toks + array("q", range(5)), (), 200.0, 200)
    assert [len(k) for k in live(store) if type(k) is bytes] == [5 * 8]


def test_many_sessions_under_one_prefix_compare_few_children(monkeypatch: pytest.MonkeyPatch) -> None:
    """Without a lifetime (DeepSeek) every session of an app stays a child
    of the node its first message starts under; their first messages share
    leading tokens (a common opening). A new session compares its bytes
    with a handful of them, not all 2,000 (it did before they were kept
    sorted), and finds the one sharing most, the latest used of equals."""
    from fidelity.cache import prefix_store

    store = PrefixStore(unit=8)
    head = list(range(100, 116))  # system prompt and tools: two full blocks
    for i in range(2000):  # "Please fix issue #<i>": 4 shared tokens, then the session's own
        store.feed(array("q", head + [1, 2, 3, 4, 10_000 + i % 500, i, 7]), (), None, i)
    calls = []
    real = prefix_store.common_tokens

    def counted(a: bytes, b: bytes) -> int:
        calls.append(1)
        return real(a, b)

    monkeypatch.setattr(prefix_store, "common_tokens", counted)
    assert store.longest(array("q", head + [1, 2, 3, 4, 10_000 + 123, 99_999]), None) == (21, 1623)
    assert len(calls) <= 8
    calls.clear()
    assert store.longest(array("q", head + [1, 2, 3, 9]), None) == (19, 1999)  # 3 shared with all: the latest
    assert len(calls) <= 2001  # ties over every child: each is looked at once


def test_sessions_resumed_after_many_others_read_their_ids_back() -> None:
    """200 sessions, two requests each, the second after all the first ones:
    with two requests' ids in memory the second turns read the first ones'
    back from the file, and every prediction is the all-in-memory one; the
    memory holds two records, the file the rest once."""
    def run(keep: int | None) -> tuple[PrefixStore, list[tuple[int, Hashable]]]:
        store = PrefixStore(unit=8, records_in_memory=keep)
        got = []
        for turn in range(2):
            for i in range(200):
                toks = array("q", [5] * 16 + [1000 + i] * (20 + 10 * turn))
                got.append(store.feed(toks, (), None, (turn, i)))
        return store, got

    spilled, got = run(2)
    assert got == run(None)[1]
    assert got[200 + 7] == (16 + 20, (0, 7))  # the first turn's prompt, its ids read back from the file
    held = [d for d in spilled._data if d is not None]  # noqa: SLF001
    assert len(held) == 2 and len(spilled._at) >= 198  # noqa: SLF001
    assert spilled._file.size >= sum(n for _, n in spilled._at.values()) > 0  # noqa: SLF001
    with pytest.raises(ValueError):
        PrefixStore(unit=8, records_in_memory=0)


@given(a=st.lists(st.integers(-3, 3), max_size=40), b=st.lists(st.integers(-3, 3), max_size=40),
       shared=st.integers(0, 40))
def test_common_tokens_is_the_common_prefix(a: list[int], b: list[int], shared: int) -> None:
    """The XOR shortcut counts exactly the equal leading ids (negative ids too)."""
    from fidelity.cache.packed_ids import common_tokens

    b = a[:shared] + b
    expected = 0
    while expected < min(len(a), len(b)) and a[expected] == b[expected]:
        expected += 1
    assert common_tokens(array("q", a).tobytes(), array("q", b).tobytes()) == expected


@pytest.mark.parametrize("little_endian", [True, False])
@given(prompts=st.lists(st.lists(st.integers(-(2**40), 2**40), max_size=40), min_size=1, max_size=8),
       unit=st.integers(1, 5))
def test_each_node_keeps_its_blocks_first_id(little_endian: bool, prompts: list[list[int]], unit: int) -> None:
    """A chain of new blocks takes each block's first id with one strided
    read of the request's packed ids (the other branch: one ``first_id``
    per block): every node in the trie holds its own block's first id, as
    ``first_id`` reads it."""
    from fidelity.cache import prefix_store
    from fidelity.cache.packed_ids import first_id

    native = prefix_store._LITTLE_ENDIAN
    prefix_store._LITTLE_ENDIAN = little_endian
    try:
        store = PrefixStore(unit)
        for i, prompt in enumerate(prompts):
            store.feed(array("q", prompts[0][: i * 3] + prompt), array("q"), float(i), f"r{i}")
    finally:
        prefix_store._LITTLE_ENDIAN = native
    live = [v for v in range(1, len(store._key)) if store._key[v][0] >= 0]
    assert live or not any(prompts)
    for v in live:
        assert store._first[v] == first_id(store._block(v)), v
