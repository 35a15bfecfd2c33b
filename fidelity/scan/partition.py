"""The two passes of a scan: index the log, then replay each cache partition.

:func:`index_chunk` (one task per byte range of a log file) parses each line
and keeps its partition key, time, place and session; bad lines are counted
with their reason. :func:`replay_batch` (one task per batch of partitions)
reads each partition's lines again in time order, simulates the cache and
lists every break of each request whose prefix broke against the one it
continues. A task returns a :class:`~fidelity.scan.aggregate.Partial`: sums
that merge in any order to the same result."""

from __future__ import annotations

import functools
import gc
import math
import os
import re
from array import array
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

import orjson

from .. import cache as cache_models
from .. import pricing, server_side, tokens
from ..bytediff import first_divergence
from ..cache._breakpoints import BreakpointCache
from ..cache.anthropic_blocks import strip_markers
from ..cache.builder import PromptIds
from ..cache.items import (
    SUPPORTED,
    FastView,
    Item,
    build_view,
    common_prefix,
    encode,
    partition_key,
    shared_items,
    view_after,
)
from ..cache.memo import TokenMemo
from ..cache.simulator import Simulator
from ..diff.causes import classify
from ..diff.locate import pointer_at
from ..errors import FidelityError
from ..providers import placed_url
from ..wire import Segment
from .aggregate import Break, CrossChild, CrossPred, Partial, Prices
from .entries import Entry, PartitionRows, Rows
from .fix_list import body_of, fix_list, segment_label
from .records import MAX_LINE, BadLine, endpoint_of, iter_lines, parse_record
from .segments import SegmentBytes
from .splice import Parsed, parse_after

__all__ = ["Task", "index_chunk", "replay_batch", "view_of", "change_label", "pointer_pattern", "listed_breaks",
           "where_of", "alive_until"]


@dataclass
class Task:
    """One replay task: partitions ``(id, provider, model, rows)``, the rows
    in time order (:class:`~fidelity.scan.entries.PartitionRows`)."""

    files: list[str]
    labels: list[str]
    partitions: list[tuple[str, str, str, PartitionRows]]
    max_line: int = MAX_LINE
    #: the price table lost tokens are priced with (``None``: the bundled one)
    prices: pricing.PriceTable | None = None


#: the collector's thresholds while a task runs (defaults: 700, 10, 10)
GC_THRESHOLDS = (50_000, 20, 100)


def _fewer_collections(fn: Callable[..., Any]) -> Callable[..., Any]:
    """Run ``fn`` with the cyclic collector's thresholds raised to
    :data:`GC_THRESHOLDS` (restored after): a scan's parsed values form no
    cycles, so rarer passes free the same memory (docs/scan.md, "Performance")."""

    @functools.wraps(fn)
    def run(*args: Any, **kwargs: Any) -> Any:
        old = gc.get_threshold()
        if old[0]:  # 0: the caller turned automatic collection off
            gc.set_threshold(*(max(a, b) for a, b in zip(old, GC_THRESHOLDS)))
        try:
            return fn(*args, **kwargs)
        finally:
            gc.set_threshold(*old)

    return run


def view_of(rec: Any, first_only: bool = False) -> FastView:
    """The fast cache view of a record (the dialect's exact ``cache_view``,
    normalised, for a dialect the fast view does not know)."""
    if rec.dialect.name in SUPPORTED:
        return build_view(rec.dialect, rec.body, first_only)
    from ..jsonbytes import split_pointer

    segs = rec.dialect.cache_view(body_of(rec))
    params = segs[0].data if segs and segs[0].kind == "params" else b""
    items = tuple(Item(s.kind, s.index, split_pointer(s.pointer), orjson.loads(s.data))
                  for s in segs if s.kind != "params")
    return FastView(rec.dialect.name, params, items)


@_fewer_collections
def index_chunk(path: str, file: int, start: int, end: int | None, max_line: int = MAX_LINE
                ) -> tuple[Rows, list[tuple[int, int, str, str]], int, list[tuple[int, str, str]]]:
    """Index the lines that start in ``[start, end)`` of ``path``: their
    :class:`~fidelity.scan.entries.Rows`, bad lines ``(file, local_line,
    reason, detail)``, the number of lines, and the failed requests (a logged
    HTTP status of 400 or more: not simulated) as ``(status, provider, model)``."""
    entries = Rows()
    bad: list[tuple[int, int, str, str]] = []
    failed: list[tuple[int, str, str]] = []
    n = 0
    # the latest line of each session (a guess that only speed depends on), with its key
    refs: dict[bytes, tuple[Parsed, bytes]] = {}
    for offset, line in iter_lines(path, start, end, max_line):
        n += 1
        if line is None:
            bad.append((file, n, "huge body", f"line longer than {max_line // (1024 * 1024)} MiB"))
            continue
        if line[:1] in b" \t\r\n" and not line.strip():  # a blank line counts as a line, not as a request
            continue
        try:
            m = _SESSION.search(line, 0, 4096) or _SESSION.search(line, max(0, len(line) - 4096))
            guess = m.group(1) if m else b""
            ref, ref_key = refs.get(guess) or (None, b"")
            parsed = parse_after(line, ref)
            rec = parsed.rec
            if rec.status is not None and rec.status >= 400:
                failed.append((rec.status, rec.provider, rec.model))
                continue
            refs.pop(guess, None)  # put back last (the least recently used go first)
            if ref is not None and _same_head(parsed, ref):
                key = ref_key
            else:
                view = view_of(rec, first_only=True)
                first = encode(view.items[:1], normalise=view.normalise)[0] if view.items else None
                if not view.items:
                    raise BadLine("empty prompt", "the body holds no prompt segments")
                key = partition_key(rec.provider, rec.model, view.params, first)
            refs[guess] = (parsed, key)
            if len(refs) > LINEAGES:
                del refs[next(iter(refs))]
        except BadLine as exc:
            bad.append((file, n, exc.reason, exc.detail))
            continue
        except (ValueError, TypeError, RecursionError) as exc:
            bad.append((file, n, "unreadable body", str(exc)[:80]))
            continue
        except Exception as exc:  # a dialect's parser refused it: counted, never fatal
            bad.append((file, n, "unreadable body", f"{type(exc).__name__}: {str(exc)[:80]}"))
            continue
        entries.append(key, rec.time, file, offset, len(line), n, rec.session, rec.provider, rec.model)
    return entries, bad, n, failed


def _same_head(parsed: Parsed, ref: Parsed) -> bool:
    """Whether ``parsed`` has ``ref``'s partition key without building its
    view: same dialect, provider and model, the first message reused by the
    splice, and every other member of the body the same object or the same
    compact bytes, in the same order (the key reads nothing else)."""
    if not parsed.reused:
        return False
    rec, old = parsed.rec, ref.rec
    if rec.dialect is not old.dialect or rec.provider != old.provider or rec.model != old.model:
        return False
    body, old_body = rec.body, old.body
    if list(body) != list(old_body) or body["messages"][0] is not old_body["messages"][0]:
        return False
    try:
        return all(v is old_body[k] or orjson.dumps(v) == orjson.dumps(old_body[k])
                   for k, v in body.items() if k != "messages")
    except TypeError:  # a value orjson refuses (a lone surrogate): the view decides
        return False

_SESSION = re.compile(rb'"session": ?"([^"\\]{1,256})"')
_NUM = re.compile(r"/\d+(?=/|$)")


def pointer_pattern(ptr: str) -> str:
    """``/messages/12/content/0/text`` -> ``/messages/*/content/*/text``."""
    return _NUM.sub("/*", ptr)


_LABEL_CUTS = (re.compile(r"\s*\(at /[^)]*\)"), re.compile(r":\s*'.*$"), re.compile(r":\s*\".*$"),
               re.compile(r"\s*→.*$"))


def change_label(detail: str | None) -> str:
    """A cause detail without its particular values, to group by:
    ``volatile value (timestamp): '12:00' → '12:05'`` -> ``volatile value (timestamp)``."""
    if not detail:
        return ""
    out = detail
    for pattern in _LABEL_CUTS:
        out = pattern.sub("", out)
    return out.strip()


def where_of(p_seg: Segment | None, c_seg: Segment | None) -> tuple[str, str, str]:
    """(segment kind, JSON pointer pattern of the deepest value where the
    two segments part, :func:`~.fix_list.segment_label`)."""
    seg = c_seg or p_seg
    assert seg is not None
    ptr = seg.pointer
    if p_seg is not None and c_seg is not None:
        at = first_divergence(p_seg.data, c_seg.data)
        if at is not None and at < len(c_seg.data):
            try:
                inner = pointer_at(c_seg.data, at)
            except Exception:  # not JSON (a text segment): the segment is precise enough
                inner = ""
            ptr = seg.pointer + (inner or "")
    return seg.kind, pointer_pattern(ptr), segment_label(seg)


@dataclass(slots=True)
class _Req:
    """What a partition keeps of each request it replayed."""

    segs: array[int]
    prompt: int
    time: float | None  # as logged (None: no time; its entries never expire)
    bp_ends: tuple[int, ...] = ()  # token offsets where its cache_control breakpoints end
    bp_ttls: tuple[float, ...] = ()  # the lifetime of each breakpoint's entry
    until: float = math.inf  # when the last of its own entries runs out


@dataclass
class _Lineage:
    """A session's previous request (parsed line, view, segment bytes and
    ids) and the builder that reuses its billed ids."""

    builder: PromptIds
    view: FastView | None = None
    index: int = -1  # the partition's request number of ``view``
    parsed: Parsed | None = None
    data: list[bytes] = field(default_factory=list)
    segs: array[int] = field(default_factory=lambda: array("q"))


#: sessions whose lineage a partition keeps (least recently used go first)
LINEAGES = 64
#: requests whose token ids a partition's prefix store keeps in memory; the
#: others' go to a temporary file (a cache without a lifetime names every
#: session's latest request for good: :class:`~fidelity.cache.prefix_store.PrefixStore`)
RECORDS_IN_MEMORY = 256


@dataclass
class _State:
    """One partition's replay state."""

    memo: TokenMemo
    sims: dict[str, Simulator] = field(default_factory=dict)
    #: the partition's distinct segments, numbered (segment ids), their bytes in a file
    data: SegmentBytes = field(default_factory=SegmentBytes)
    reqs: list[_Req] = field(default_factory=list)
    lineages: dict[str | None, _Lineage] = field(default_factory=dict)
    last: _Lineage | None = None

    def lineage(self, session: str | None, continues: bool) -> _Lineage:
        """The lineage of ``session``: its own when the request continues a
        request of this partition, else a new one from the partition's latest
        request (a forked subagent shares its parent's history; only speed
        depends on the choice)."""
        got = self.lineages.pop(session, None) if continues else None
        if got is None:
            last = self.last
            got = _Lineage(PromptIds(self.memo)) if last is None else \
                _Lineage(PromptIds(self.memo), last.view, last.index, last.parsed, last.data, last.segs)
        self.lineages[session] = got
        if len(self.lineages) > LINEAGES:
            del self.lineages[next(iter(self.lineages))]
        self.last = got
        return got


class _Segments(Sequence[Segment]):
    """A request's segments, each made when read: a break is classified from a few of them."""

    __slots__ = ("_data", "_items", "_sids")

    def __init__(self, st: _State, items: Sequence[Item], sids: Sequence[int]) -> None:
        self._data, self._items, self._sids = st.data, items, sids

    def __len__(self) -> int:
        return min(len(self._items), len(self._sids))

    @property
    def kinds(self) -> list[str]:
        """Each segment's kind, without reading its bytes (:func:`fidelity.diff.causes.classify` asks)."""
        return [it.kind for it in self._items[: len(self)]]

    def __iter__(self) -> Iterator[Segment]:
        data = self._data
        for it, sid in zip(self._items, self._sids):
            yield Segment(it.kind, it.index, it.pointer, data[sid])  # type: ignore[arg-type]

    def __getitem__(self, i: Any) -> Any:
        if isinstance(i, slice):
            return [self[j] for j in range(*i.indices(len(self)))]
        if i < 0:
            i += len(self)
        if not 0 <= i < len(self):
            raise IndexError(i)
        it = self._items[i]
        return Segment(it.kind, it.index, it.pointer, self._data[self._sids[i]])


@_fewer_collections
def replay_batch(task: Task) -> Partial:
    """Replay every partition of ``task``; the merged sums."""
    out = Partial()
    memo = _worker_memo()
    fds: dict[int, int] = {}
    prices = Prices(task.prices if task.prices is not None else pricing.load())
    try:
        for _, provider, model, items in task.partitions:
            st = _State(memo)
            try:
                _replay(st, task, provider, model, items, out, fds, prices)
            finally:
                st.data.close()  # the partition's segment file
    finally:
        for fd in fds.values():
            os.close(fd)
    out.tokenized_bytes = memo.tokenized_bytes
    return out


_MEMO: TokenMemo | None = None
#: bytes of token ids a worker's memo keeps across its tasks
MEMO_BYTES = 256 * 1024 * 1024


def _worker_memo() -> TokenMemo:
    global _MEMO
    if _MEMO is None:
        _MEMO = TokenMemo(MEMO_BYTES)
    _MEMO.tokenized_bytes = 0
    return _MEMO


def _read(task: Task, fds: dict[int, int], e: Entry) -> bytes:
    fd = fds.get(e.file)
    if fd is None:
        fd = fds[e.file] = os.open(task.files[e.file], os.O_RDONLY)
    return os.pread(fd, e.length, e.offset)


def _replay(st: _State, task: Task, provider: str, model: str,
            items: Iterable[tuple[Entry, tuple[int, int] | None, bool, bool]], out: Partial,
            fds: dict[int, int], prices: Prices) -> None:
    cm = cache_models.get(provider, model)
    tok = tokens.for_model(model, provider, nearest=True)  # as the builder counts it: unknown, the nearest family
    # causes by the segment ids of the two requests (ids are the partition's own)
    classify_memo: dict[tuple[Any, ...], tuple[str, str | None]] = {}
    explicit = isinstance(cm, BreakpointCache)  # Anthropic / DashScope explicit caching: strip markers
    local: dict[tuple[int, int], int] = {}
    req_entries: list[Entry] = []
    out.partitions += 1
    out.note_tokenizer(provider, model, tok.name, tok.estimated)
    for e, pred_loc, pred_same, is_cross_pred in items:
        line = _read(task, fds, e)
        ln = st.lineage(e.session, pred_same)
        try:
            parsed = parse_after(line, ln.parsed)
            rec = parsed.rec
            view, k = view_after_rec(rec, ln.view)
        except Exception as exc:  # the index pass read it; a file changed under us
            out.add_bad(task.labels[e.file], e.line, "changed during scan", str(exc)[:80])
            continue
        index = len(st.reqs)
        try:
            built = ln.builder.build(rec, view, k, e.time, index, _placed(rec.url))
            cm_name, sreq = built.cache_model, built.request
            sim = st.sims.get(cm_name)
            if sim is None:
                # fed in time order, never asked about an earlier time: dead entries can go
                sim = st.sims[cm_name] = Simulator(cm_name, model, expire=True, records_in_memory=RECORDS_IN_MEMORY)
            pred = sim.feed(sreq)
        except FidelityError as exc:  # the simulator refused it (too many breakpoints...): counted
            out.add_bad(task.labels[e.file], e.line, "simulator refused", str(exc)[:80])
            # the builder built this request, the lineage still holds the one before: start afresh
            ln.builder = PromptIds(st.memo)
            continue
        data = encode(view.items, ln.view.items if ln.view is not None else (), ln.data, view.normalise, k)
        if explicit:
            # Anthropic keys its cache on content, not on where the markers sit
            # (a breakpoint moves forward each turn): match without them
            # (reused segments were stripped already: their marks carry over)
            for i in range(k, len(data)):
                if b'"cache_control"' in data[i]:
                    data[i] = strip_markers(data[i])
        segs = array("q", ln.segs[:k])
        segs.extend(map(st.data.number, data[k:]))
        prev_view, prev_index, prev_parsed = ln.view, ln.index, ln.parsed
        ln.view, ln.index, ln.parsed, ln.data, ln.segs = view, index, parsed, data, segs
        t = e.time if e.time is not None else 0.0
        bp_ends = tuple(sreq.breakpoints)
        bp_ttls = cm.marker_ttls(sreq) if isinstance(cm, BreakpointCache) else None
        until = alive_until(e.time, cm.ttl, bp_ttls)
        prompt, read = pred.prompt or 0, pred.cache_read or 0
        # a request keeps its segment ids, not its parsed body (memory stays
        # with the unique content); a break re-reads its predecessor's line
        r = _Req(segs, prompt, e.time, bp_ends, bp_ttls or (), until)
        st.reqs.append(r)
        req_entries.append(e)
        local[(e.file, e.offset)] = index
        apart = _apart(parsed) if rec.usage else None
        out.add_request(provider, model, rec.day, prompt, read, pred.cache_write or 0, e.length, rec.usage, apart)
        if is_cross_pred:
            out.cross_preds[(e.file, e.offset)] = CrossPred(prompt, provider, model, view.params,
                                                            _head(st, view.items, segs), (task.labels[e.file], e.line),
                                                            (e.file, e.offset, e.length), t, until)
        if pred_loc is not None and not pred_same:
            out.cross_children.append(CrossChild(
                (e.file, e.offset, e.length), pred_loc, task.labels[e.file], e.line, t, rec.day, provider, model,
                prompt, read, view.params, _head(st, view.items, segs)))
            continue
        j = local.get(pred_loc) if pred_loc is not None else None
        if j is None:
            j = pred.nearest if pred.nearest is not None else pred.parent  # type: ignore[assignment]
        if j is None:
            continue
        p = st.reqs[j]
        if e.time is not None and e.time > p.until:
            continue  # nothing it wrote was alive when this request came: the change cost nothing
        n_p, n_c = len(p.segs), len(segs)
        lim = min(n_p, n_c)
        k = common_prefix(p.segs, segs)
        if k >= n_p or k >= lim - 1:
            continue  # continues its predecessor, or branches at its own last segment
        ideal = min(prompt, sim.model.reusable(min(p.prompt, prompt), prompt))
        if sim.explicit:
            # what the predecessor's breakpoints stored and still held, up to the shorter prompt
            floor = getattr(sim.model, "minimum", 0)
            m = min(p.prompt, prompt)
            ideal = max((b for b, life in zip(p.bp_ends, p.bp_ttls) if floor <= b <= m and
                         (e.time is None or p.time is None or e.time - p.time <= life)),
                        default=0) if sreq.breakpoints else 0
        lost = max(0, ideal - read)
        if lost == 0:
            continue
        pe = req_entries[j]
        # the predecessor is usually the one this request was compared with;
        # else its line is read again (a request keeps ids, not its body)
        p_rec = prev_parsed.rec if j == prev_index and prev_parsed is not None else \
            parse_record(_read(task, fds, pe))
        p_items = prev_view.items if j == prev_index and prev_view is not None else view_of(p_rec).items
        p_segs, c_segs = _Segments(st, p_items, p.segs), _Segments(st, view.items, segs)
        listed = listed_breaks(p_rec, rec, model, p_segs, c_segs)
        if listed:
            got: tuple[str, str | None] = listed[0][:2]
            kind, ptr, label = listed[0][2]
        else:  # no list (two dialects): the first break alone
            mkey = (p.segs[k], segs[k], tuple(p.segs[k + 1:k + 2]), tuple(segs[k + 1:k + 2]),
                    tuple(sid for it, sid in zip(p_items, p.segs) if it.kind == "tools"),
                    tuple(sid for it, sid in zip(view.items, segs) if it.kind == "tools"), p_items[k].index)
            memo_got = classify_memo.get(mkey)
            if memo_got is None:
                cause = classify(p_segs, c_segs, k)
                memo_got = classify_memo[mkey] = (cause.kind, cause.detail)
                if len(classify_memo) > 100_000:
                    classify_memo.clear()
            got = memo_got
            kind, ptr, label = where_of(p_segs[k], c_segs[k])
        out.add_break(Break(cause=got[0], change=change_label(got[1]), detail=got[1] or "",
                            behind=tuple((c, change_label(d), *w) for c, d, w in listed[1:]),
                            where_kind=kind, pointer=ptr, label=label, provider=provider, model=model,
                            day=rec.day, lost=lost, time=t,
                            parent=(task.labels[pe.file], pe.line),
                            child=(task.labels[e.file], e.line),
                            parent_loc=(pe.file, pe.offset, pe.length),
                            child_loc=(e.file, e.offset, e.length),
                            usd_nano=prices.lost_nano(provider, model, lost, prompt=prompt, time=e.time)))


def listed_breaks(p_rec: Any, rec: Any, model: str, p_segs: Sequence[Segment], c_segs: Sequence[Segment]
                  ) -> list[tuple[str, str, tuple[str, str, str]]]:
    """Every break of ``rec`` against ``p_rec``, as ``fidelity diff`` lists them (the first carries the
    loss): ``(cause, detail, (segment kind, pointer pattern, label))`` each; empty for two dialects."""
    if p_rec.dialect is not rec.dialect:
        return []
    return [(b.cause, b.detail, (b.segment, pointer_pattern(b.pointer), b.label))
            for b in fix_list(rec.dialect, model, body_of(p_rec), body_of(rec), list(p_segs), list(c_segs))]


def alive_until(time: float | None, ttl: float | None, marker_ttls: Sequence[float] | None = None) -> float:
    """When the last cache entry a request wrote at ``time`` runs out, counting
    from that request alone: ``ttl`` after it, or with explicit breakpoints
    (``marker_ttls``) the longest of their lifetimes (none: it wrote nothing).
    Without a time, never (the simulator keeps such an entry alive)."""
    if time is None:
        return math.inf
    if marker_ttls is not None:
        return time + max(marker_ttls, default=-math.inf)
    return math.inf if ttl is None else time + ttl


def _apart(parsed: Parsed) -> str | None:
    """Why the billed prompt of the parsed line holds what the line does not
    (:func:`fidelity.server_side.reason`); messages shared with an earlier line
    that held no server tool mark are not searched again."""
    rec, line = parsed.rec, parsed.line
    if parsed.marks is None:
        parsed.marks = server_side.has_marks(line, parsed.shared if parsed.shared_clean else (0, 0))
    ep = endpoint_of(rec.url) if rec.url else None
    return server_side.reason(rec.body, server_prompt=ep.server_prompt if ep is not None else "", marks=parsed.marks,
                              dialect=rec.dialect.name, provider=ep.provider if ep is not None else None,
                              when=rec.time)


_placed = functools.lru_cache(maxsize=4096)(placed_url)  # a log names few URLs


def view_after_rec(rec: Any, prev: FastView | None) -> tuple[FastView, int]:
    """:func:`view_of` a record, and how many leading items equal ``prev``'s."""
    if rec.dialect.name in SUPPORTED:
        return view_after(rec.dialect, rec.body, prev)
    view = view_of(rec)
    return view, shared_items(view.items, prev.items) if prev is not None else 0


def _head(st: _State, items: Sequence[Item], segs: Sequence[int]) -> tuple[Segment, ...]:
    """The leading run of segments of the first segment's kind (all tools,
    or all system sections): what a head change is classified on."""
    if not items:
        return ()
    first = items[0].kind
    out = []
    for it, sid in zip(items, segs):
        if it.kind != first:
            break
        out.append(Segment(it.kind, it.index, it.pointer, st.data[sid]))  # type: ignore[arg-type]
    return tuple(out)
