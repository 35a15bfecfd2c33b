"""A provider's prompt cache as state over a stream of requests:
:class:`Simulator` keeps it for one provider's rules (a
:class:`~fidelity.cache.CacheModel`) and answers, for each request fed in
time order, what the provider would report (:class:`Usage`) and which
earlier request the read comes from (:attr:`Prediction.parent`).

>>> from fidelity.cache.simulator import Simulator, SimRequest
>>> sim = Simulator("openai")
>>> a = sim.feed(SimRequest(tuple(range(3000)), time=0.0, label="a"))
>>> b = sim.feed(SimRequest(tuple(range(2000)) + (9,) * 900, time=5.0, label="b"))
>>> (b.prompt, b.cache_read, b.parent)
(2900, 1920, 'a')

Requests only share entries inside one *partition* (:attr:`SimRequest.key`);
:meth:`Simulator.predict` leaves the state unchanged. The stores
(:class:`PrefixStore`, the engine's :class:`~.engine.BlockPool`,
:class:`BreakpointStore`): docs/replay.md, "The simulator's stores".
"""

from __future__ import annotations

import threading
from bisect import bisect_right
from collections.abc import Hashable, Iterable, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from ..errors import InputError
from ._base import CacheModel, PromptTokens, settle_prompt_fields
from ._breakpoints import BreakpointCache
from .engine import BlockPool, EngineCache
from .prefix_store import PrefixStore

_ITEM = 8  # bytes per packed token id (array('q'))

__all__ = [
    "Usage",
    "Prediction",
    "SimRequest",
    "PrefixStore",
    "BreakpointStore",
    "Simulator",
    "as_request",
    "simulated",
]


@dataclass(frozen=True)
class Usage:
    """What a provider reports for one request, in its own words: prompt
    tokens billed, tokens read from the cache, tokens written to it
    (``None`` where the provider does not report it). A prediction and a
    measurement (a live probe, a recorded response) have this shape."""

    prompt: int | None
    cache_read: int | None
    cache_write: int | None

    def to_json(self) -> dict[str, Any]:
        return {"prompt": self.prompt, "cache_read": self.cache_read, "cache_write": self.cache_write}


@dataclass(frozen=True)
class Prediction(Usage):
    """A simulated :class:`Usage` and where the read comes from: ``parent``
    is the label of the earlier request whose entry was read (prefix caches:
    the latest that used the deepest shared block; ``None``: nothing was
    read). ``write_ttls`` splits ``cache_write`` by entry lifetime in
    seconds (Anthropic bills a one-hour write at twice the five-minute
    rate); empty where writes are not billed by lifetime."""

    parent: Hashable | None = None
    write_ttls: tuple[tuple[float, int], ...] = ()
    #: prefix caches: the earlier live request sharing the longest prefix
    #: with this one even when the rule lets nothing be read (what a differ
    #: compares a miss with); ``None`` when none shares a token
    nearest: Hashable | None = None

    def to_json(self) -> dict[str, Any]:
        return {**super().to_json(), "parent": self.parent}


@dataclass(frozen=True)
class SimRequest:
    """One request as its provider's cache sees it.

    ``tokens``: the prompt in cache order (packed as ``array('q')``).
    ``time``: send time in seconds (any epoch; ``None``: unknown, the
    request keeps its place in the given order and no lifetime expires
    across it). ``breakpoints`` / ``ttls``: token offsets that end a
    ``cache_control`` block and each one's lifetime in seconds (explicit
    caches). ``blocks``: token offsets that end every content block (for
    the 20-block lookback). ``output``: the reply's tokens (kept after the
    prompt by engines and DeepSeek). ``key``: the partition; requests with
    different keys never share an entry. ``label``: how predictions name
    this request as a parent (default: its position in the feed).
    """

    tokens: Sequence[int]
    time: float | None = None
    breakpoints: tuple[int, ...] = ()
    ttls: tuple[float, ...] = ()
    blocks: tuple[int, ...] = ()
    output: Sequence[int] = ()
    key: Hashable = ""
    label: Hashable | None = None
    #: provider tokens per token of ``tokens`` (1.0: the same tokenizer). A
    #: replay that knows the reported prompt length of a request sets it so
    #: that minimums, steps and the predicted figures are in the provider's
    #: count while prefixes are still matched on ``tokens``.
    scale: float = 1.0

    def __post_init__(self) -> None:
        settle_prompt_fields(self)

    def __len__(self) -> int:
        return len(self.tokens)


# --------------------------------------------------------------------------- explicit breakpoints


@dataclass
class _Entry:
    tokens: Sequence[int]  # ids (``array('q')``) of the request that last wrote it (at least ``length`` of them)
    length: int
    last_used: float | None
    ttl: float
    label: Hashable


@dataclass
class BreakpointStore:
    """Entries written at explicit breakpoints, by prefix length; each holds
    the array of the request that wrote it, compared with one ``memcmp``
    against the request's packed ids (copied once per request)."""

    lookback: int = 20
    entries: dict[int, list[_Entry]] = field(default_factory=dict)
    _last: tuple[Any, bytes] | None = field(default=None, init=False, repr=False, compare=False)

    @staticmethod
    def _alive(e: _Entry, now: float | None) -> bool:
        return now is None or e.last_used is None or now - e.last_used <= e.ttl

    def _bytes(self, req: SimRequest) -> bytes:
        """The request's packed ids (copied once per request: :meth:`done`
        forgets it)."""
        last = self._last
        if last is not None and last[0] is req.tokens:
            return last[1]
        data: bytes = req.tokens.tobytes()  # type: ignore[attr-defined]  # settled to array('q')
        self._last = (req.tokens, data)
        return data

    def candidates(self, req: SimRequest) -> list[int]:
        """Prefix lengths a request can read: each breakpoint and the block
        ends up to ``lookback`` blocks before it, longest first."""
        bps = req.breakpoints
        ends = sorted(req.blocks + bps)  # block ends come sorted: one pass; repeats stay
        back = self.lookback + 1
        out: set[int] = set()
        for bp in bps:
            at = bisect_right(ends, bp)
            seen: set[int] = set()
            while at and len(seen) < back:  # the last ``back`` distinct ends up to bp
                at -= 1
                seen.add(ends[at])
            out |= seen
        return sorted(out, reverse=True)

    def hit(self, req: SimRequest, now: float | None) -> _Entry | None:
        """The longest live entry at a candidate position that matches."""
        entries = self.entries
        data: bytes | None = None
        for pos in self.candidates(req):
            bucket = entries.get(pos)
            if not bucket:
                continue
            if data is None:
                data = self._bytes(req)
            for e in bucket:
                if self._alive(e, now) and data.startswith(memoryview(e.tokens).cast("B")[: pos * _ITEM]):  # type: ignore[arg-type]
                    return e
        return None

    def write(self, req: SimRequest, pos: int, ttl: float, now: float | None, label: Hashable) -> bool:
        """Store the prefix ending at ``pos``; refresh it when already
        stored (True when it was new)."""
        bucket = self.entries.setdefault(pos, [])
        if bucket:
            data = self._bytes(req)
            for e in bucket:
                if data.startswith(memoryview(e.tokens).cast("B")[: pos * _ITEM]):  # type: ignore[arg-type]
                    fresh = not self._alive(e, now)
                    e.tokens, e.last_used, e.label = req.tokens, now, label
                    e.ttl = ttl if fresh else max(e.ttl, ttl)
                    return fresh
        bucket.append(_Entry(req.tokens, pos, now, ttl, label))
        if now is not None:  # drop what can never be read again
            bucket[:] = [e for e in bucket if self._alive(e, now)]
        return True

    def done(self) -> None:
        """The request in hand is finished: drop its copy."""
        self._last = None


# --------------------------------------------------------------------------- the simulator


def _unit_of(model: CacheModel) -> int:
    for name in ("step", "unit", "block_size", "page_size"):
        value = getattr(model, name, None)
        if isinstance(value, int) and value > 1:
            return value
    return 32


class Simulator:
    """One provider's cache over a stream of requests: the cache model
    :func:`fidelity.cache.get` gives for ``provider``, ``model`` and
    ``params`` (or ``cache_model``). ``expire``: drop dead entries as
    requests come (the same answers; :meth:`predict` then refuses a time
    before the latest request's); ``records_in_memory``: see
    :class:`PrefixStore`.
    """

    def __init__(self, provider: str | None = None, model: str | None = None, *,
                 cache_model: CacheModel | None = None, expire: bool = False,
                 records_in_memory: int | None = None, **params: Any) -> None:
        if cache_model is None:
            if provider is None:
                raise ValueError("give a provider or a cache_model")
            from . import get

            cache_model = get(provider, model, **params)
        self.model = cache_model
        self.explicit = isinstance(cache_model, BreakpointCache)
        self._unit = _unit_of(cache_model)
        self._stores: dict[Hashable, Any] = {}
        self._fed = 0
        self._now: float | None = None
        self._expire = expire
        self._records_in_memory = records_in_memory

    def _store(self, key: Hashable, create: bool) -> Any:
        store = self._stores.get(key)
        if store is None and create:
            if self.explicit:
                store = BreakpointStore(lookback=getattr(self.model, "lookback", 20))
            elif isinstance(self.model, EngineCache) and self.model.capacity_tokens is not None:
                store = BlockPool(self.model.block_size, self.model.capacity_tokens)  # the engine's own eviction
            else:
                store = PrefixStore(self._unit, self.model.ttl, self._expire, self._records_in_memory)
            self._stores[key] = store
        return store

    # -- the question --------------------------------------------------------
    def predict(self, req: SimRequest) -> Prediction:
        """What ``req`` would read and write if sent now; the state is unchanged."""
        if self._expire and req.time is not None and self._now is not None and req.time < self._now:
            raise InputError(f"request {req.label!r} at {req.time} asks about a time before the latest request "
                             f"({self._now}): this simulator drops expired entries (expire=True)")
        return self._step(req, commit=False)

    def feed(self, req: SimRequest) -> Prediction:
        """Send ``req``: predict it, then store what it writes and refresh
        what it reads. Requests must come in time order (equal times and
        unknown times keep the given order)."""
        if req.time is not None and self._now is not None and req.time < self._now:
            raise InputError(f"request {req.label!r} at {req.time} comes before the previous one at {self._now}; "
                             "feed requests in time order (Simulator.run sorts them)")
        return self._step(req, commit=True)

    def run(self, requests: Iterable[SimRequest]) -> list[Prediction]:
        """Feed ``requests`` in time order (stable: equal or unknown times keep
        the given order; an unknown time takes the last known one before it)
        and return the predictions in the given order."""
        reqs = list(requests)
        keyed = []
        last = float("-inf")
        for i, r in enumerate(reqs):
            if r.time is not None:
                last = r.time
            keyed.append((last, i))
        order = [i for _, i in sorted(keyed)]
        out: list[Prediction | None] = [None] * len(reqs)
        for i in order:
            r = reqs[i]
            if r.label is None:
                r = replace(r, label=i)
            out[i] = self.feed(r)
        return [p for p in out if p is not None]

    def _step(self, req: SimRequest, *, commit: bool) -> Prediction:
        label = req.label if req.label is not None else self._fed
        now = req.time if req.time is not None else self._now
        pred = (self._explicit if self.explicit else self._implicit)(req, now, label, commit)
        if commit:
            self._fed += 1
            if now is not None:
                self._now = now
        return pred

    def _implicit(self, req: SimRequest, now: float | None, label: Hashable, commit: bool) -> Prediction:
        n = _scaled(len(req.tokens), req.scale)
        store: PrefixStore | None = self._store(req.key, commit)
        if store is None:
            shared, parent = 0, None
        elif commit:  # one walk: what it reads, then what it writes
            output = self.model.kept_output(req.output)
            shared, parent = store.feed(req.tokens, output, now, label)
        else:
            shared, parent = store.longest(req.tokens, now)
        shared = _scaled(shared, req.scale)
        read = min(n, self.model.reusable(shared, n)) if shared else 0
        stored = min(n, self.model.reusable(n, n + 1))
        written = max(0, stored - read)
        return _prediction(n, read, written, parent if read else None, (), parent)

    def _explicit(self, req: SimRequest, now: float | None, label: Hashable, commit: bool) -> Prediction:
        model = self.model
        assert isinstance(model, BreakpointCache)
        model._check(req)  # noqa: SLF001 -- the model's own limit on breakpoints
        n = _scaled(len(req.tokens), req.scale)
        store: BreakpointStore | None = self._store(req.key, commit)
        try:
            entry = store.hit(req, now) if store is not None else None
            read = _scaled(entry.length, req.scale) if entry is not None else 0
            parent = entry.label if entry is not None else None
            ttls = model.marker_ttls(req)
            writes: dict[float, int] = {}
            at = read
            for bp, ttl in sorted(zip(req.breakpoints, ttls)):
                bp_s = _scaled(bp, req.scale)
                if bp_s < model.minimum or bp_s <= at:
                    continue
                writes[ttl] = writes.get(ttl, 0) + bp_s - at
                at = bp_s
            written = at - read
            if commit and store is not None:
                if entry is not None:
                    entry.last_used = now
                    entry.label = label
                for bp, ttl in zip(req.breakpoints, ttls):
                    if _scaled(bp, req.scale) >= model.minimum:
                        store.write(req, bp, ttl, now, label)
        finally:
            if store is not None:  # its copy of this request's bytes is for this request only
                store.done()
        return _prediction(n, read, written, parent, tuple(sorted(writes.items())), None)


_new = object.__new__


def _prediction(prompt: int, read: int, write: int, parent: Hashable | None,
                write_ttls: tuple[tuple[float, int], ...], nearest: Hashable | None) -> Prediction:
    """``Prediction(prompt, read, write, parent, write_ttls, nearest)``
    without the frozen dataclass's six ``object.__setattr__`` calls (a
    scan makes one per request); equality, hashing and pickling alike."""
    p = _new(Prediction)
    p.__dict__.update(prompt=prompt, cache_read=read, cache_write=write, parent=parent,
                      write_ttls=write_ttls, nearest=nearest)
    return p


def _scaled(count: int, scale: float) -> int:
    return count if scale == 1.0 else int(round(count * scale))


def as_request(prompt: PromptTokens, label: Hashable) -> SimRequest:
    """A :class:`~fidelity.cache.PromptTokens` as the simulator's request."""
    return SimRequest(prompt.tokens, prompt.time, prompt.breakpoints, prompt.ttls, prompt.blocks,
                      prompt.output, label=label)


def simulated(cm: CacheModel, earlier: Sequence[PromptTokens], request: PromptTokens) -> Prediction:
    """What ``request`` reads and writes when sent after ``earlier`` (those
    not sent later than it, fed in time order to a simulator of ``cm``): the
    cache computation behind ``diff``, calibration and ``probe``. The
    simulators of the last few ``earlier`` sequences are kept (a question
    leaves one as it was): neither ``cm`` nor the prompts may change once
    asked about."""
    earlier = tuple(earlier)
    if any(p.time > request.time for p in earlier):
        earlier = tuple(p for p in earlier if p.time <= request.time)
    with _FED_LOCK:
        for k in range(len(_FED) - 1, -1, -1):
            fed_cm, fed_earlier, sim = _FED[k]
            if fed_earlier == earlier and _same_model(fed_cm, cm):
                _FED.append(_FED.pop(k))  # the latest used goes last
                return sim.predict(as_request(request, "child"))
    sim = Simulator(cache_model=cm)
    sim.run([as_request(p, f"parent#{i}") for i, p in enumerate(earlier)])
    with _FED_LOCK:  # one question at a time to a simulator others may hold
        _FED.append((cm, earlier, sim))
        del _FED[:-_FED_KEPT]
        return sim.predict(as_request(request, "child"))


def _same_model(a: CacheModel, b: CacheModel) -> bool:
    """Whether two cache models answer alike: the same class and settings
    (each call of :func:`fidelity.cache.get` makes a new model)."""
    return a is b or (type(a) is type(b) and vars(a) == vars(b))


#: (cache model, earlier prompts, the simulator fed them), the latest used last
_FED: list[tuple[CacheModel, tuple[PromptTokens, ...], Simulator]] = []
_FED_KEPT = 8
_FED_LOCK = threading.Lock()
