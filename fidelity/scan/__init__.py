"""``fidelity scan``: what cache misses cost across a request log, on one
machine or a cluster. Inputs become request-log files (:mod:`.records`), an
index pass keys each line (:mod:`.partition`, :mod:`.entries`), partitions
replay in time order through the one simulator, and :mod:`.aggregate` merges
the partials into one JSON result every view renders. docs/scan.md."""

from __future__ import annotations

import os
import shutil
import tempfile
from array import array
from collections import defaultdict
from collections.abc import Sequence
from pathlib import Path
from typing import Any, Protocol

from .. import cache as cache_models
from .. import pricing
from ..diff.causes import classify
from ..wire import Segment
from .aggregate import SCHEMA, Break, Partial, Prices, build_result
from .entries import PartitionRows, Rows
from .executors import EXECUTORS, Executor, make_executor
from .fix_list import body_of
from .partition import Task, change_label, index_chunk, replay_batch, where_of
from .records import MAX_LINE, prepare_inputs

__all__ = ["scan", "SCHEMA", "EXECUTORS", "Progress"]

#: bytes of log per index task
CHUNK_BYTES = 16 * 1024 * 1024
#: a partition larger than this splits at gaps longer than its cache's lifetime
SPLIT_BYTES = 256 * 1024 * 1024


class Progress(Protocol):
    """A progress display: ``start(phase, total)`` at each phase, ``advance()``
    after each task."""

    def start(self, phase: str, total: int) -> None: ...

    def advance(self) -> None: ...


class _Silent:
    def start(self, phase: str, total: int) -> None:
        pass

    def advance(self) -> None:
        pass


def scan(paths: Sequence[str | os.PathLike[str]], *, executor: str | Executor = "local", workers: int | None = None,
         address: str | None = None, prices: pricing.PriceTable | None = None, top: int = 20,
         examples_dir: str | Path | None = None, progress: Progress | None = None,
         chunk_bytes: int = CHUNK_BYTES, split_bytes: int = SPLIT_BYTES, max_line: int = MAX_LINE) -> dict[str, Any]:
    """Scan request logs; the ``fidelity.scan/1`` JSON document."""
    prog: Progress = progress or _Silent()
    ex = make_executor(executor, workers, address) if isinstance(executor, str) else executor
    table = prices if prices is not None else pricing.load()
    work = Path(tempfile.mkdtemp(prefix="fidelity-scan-"))
    try:
        prog.start("reading inputs", len(paths))
        files = prepare_inputs([Path(p) for p in paths], work)
        names = [str(f) for f, _ in files]
        labels = [lbl for _, lbl in files]
        partial = Partial()
        rows = _index(ex, names, labels, partial, prog, chunk_bytes, max_line)
        tasks = _tasks(rows, names, labels, ex.workers, split_bytes, max_line, table, partial.notes)
        models = rows.models()
        del rows  # the tasks hold what the replay needs
        _preload(models, ex)
        prog.start("replaying partitions", len(tasks))
        for part in ex.map(replay_batch, [(t,) for t in tasks], prog.advance):
            partial.merge(part)
        _cross(partial, Prices(table), names)
        example_files = _write_examples(partial, names, examples_dir, top) if examples_dir else None
        return build_result(partial, inputs=[str(p) for p in paths], table=table, top=top,
                            example_files=example_files)
    finally:
        if isinstance(executor, str):  # an executor passed in belongs to the caller
            ex.close()
        shutil.rmtree(work, ignore_errors=True)


def _index(ex: Executor, names: list[str], labels: list[str], partial: Partial, prog: Progress,
           chunk_bytes: int, max_line: int) -> Rows:
    jobs: list[tuple[Any, ...]] = []
    for i, name in enumerate(names):
        size = os.path.getsize(name)
        start = 0
        while True:
            end = start + chunk_bytes
            jobs.append((name, i, start, end if end < size else None, max_line))
            if end >= size:
                break
            start = end
    prog.start("indexing", len(jobs))
    results = ex.map(index_chunk, jobs, prog.advance)
    rows = Rows()
    base: dict[int, int] = defaultdict(int)
    for j, (_, file, _, _, _) in enumerate(jobs):
        chunk, bad, n, failed = results[j]
        results[j] = None  # merged: the chunk's columns can go
        b = base[file]
        rows.extend(chunk, b)
        for f, ln, reason, detail in bad:
            partial.add_bad(labels[f], b + ln, reason, detail)
        for status, provider, model in failed:
            partial.add_failed(status, provider, model)
        base[file] = b + n
    return rows


def _preload(models: set[tuple[str, str]], ex: Executor) -> None:
    """Load the tokenizers (billed ones included) and wire dialects the replay
    needs in this process, then restart a forking pool so workers inherit them."""
    from .. import tokens, wire
    from ..tokens.billed import billing_tokenizer

    for provider, model in sorted(models):
        try:
            tok = tokens.for_model(model, provider)
            tok.ids("warm")
            for name in wire.names():
                d = wire.get(name)
                if d.provider == provider:
                    billing_tokenizer(tok, model).ids("warm")
        except Exception:  # an unknown model: the replay reports it
            continue
    restart = getattr(ex, "restart", None)
    if restart is not None:
        restart()


def _tasks(rows: Rows, names: list[str], labels: list[str], workers: int, split_bytes: int,
           max_line: int, table: pricing.PriceTable, notes: list[str]) -> list[Task]:
    """The partitions in batches for the workers, by their keys' bytes, rows in
    time order (no time: 0; ties: file, offset); a partition over ``split_bytes``
    that cannot split is noted in ``notes``."""
    import numpy as np

    n = len(rows)
    if not n:
        return []
    key = np.frombuffer(rows.key, dtype=np.int32)
    time = np.frombuffer(rows.time, dtype=np.float64)
    t0 = np.where(np.isnan(time), 0.0, time)
    file = np.frombuffer(rows.file, dtype=np.int32)
    offset = np.frombuffer(rows.offset, dtype=np.int64)
    length = np.frombuffer(rows.length, dtype=np.int64)
    line = np.frombuffer(rows.line, dtype=np.int64)
    rank = np.empty(len(rows.keys), dtype=np.int64)
    rank[sorted(range(len(rows.keys)), key=rows.keys.__getitem__)] = np.arange(len(rows.keys))
    key_rank = rank[key]
    order = np.lexsort((offset, file, t0, key_rank))
    cuts = np.flatnonzero(np.diff(key_rank[order])) + 1
    parts: list[tuple[str, Any]] = []  # (partition id, its rows in time order)
    for idx in np.split(order, cuts):
        first = int(idx[0])
        hexkey = rows.keys[key[first]].hex()
        provider, model = _names(rows, first)
        size = int(length[idx].sum())
        # nothing survives a gap longer than the longest lifetime an entry of this cache can have
        ttl = cache_models.get(provider, model).longest_ttl()
        if size > split_bytes and ttl is not None:
            pieces = np.split(idx, np.flatnonzero(np.diff(t0[idx]) > ttl) + 1)
            parts += [(f"{hexkey}#{m}", piece) for m, piece in enumerate(pieces)]
        else:
            if size > split_bytes:
                notes.append(f"a partition of {size / 1e6:,.0f} MB ({provider}/{model}) was replayed "
                             "whole by one worker: its cache has no lifetime, so no gap in time splits it, and the "
                             "worker's memory grows with its unique content (docs/scan.md, \"Partitioning\")")
            parts.append((hexkey, idx))
    part_no = np.empty(n, dtype=np.int64)
    for p, (_, idx) in enumerate(parts):
        part_no[idx] = p
    # each request's session predecessor: the one before it in its session's time order
    session = np.frombuffer(rows.session, dtype=np.int32)
    named = np.flatnonzero(session > 0)  # 0: no session
    by_session = named[np.lexsort((offset[named], file[named], t0[named], session[named]))]
    a, b = by_session[:-1], by_session[1:]
    linked = session[a] == session[b]
    pred = np.full(n, -1, dtype=np.int64)
    pred[b[linked]] = a[linked]
    cross = np.zeros(n, dtype=bool)
    cross[a[linked & (part_no[a] != part_no[b])]] = True
    n_batches = max(1, min(len(parts), workers * 4))
    batches: list[list[tuple[str, str, str, PartitionRows]]] = [[] for _ in range(n_batches)]
    load = [0] * n_batches
    sizes = [int(length[idx].sum()) for _, idx in parts]
    for p in sorted(range(len(parts)), key=lambda p: (-sizes[p], parts[p][0])):
        pid, idx = parts[p]
        i = min(range(n_batches), key=lambda j: (load[j], j))
        load[i] += sizes[p]
        before = pred[idx]
        has = before >= 0
        at = np.where(has, before, 0)
        sessions, local = np.unique(session[idx], return_inverse=True)
        first = int(idx[0])
        provider, model = _names(rows, first)
        batches[i].append((pid, provider, model, PartitionRows(
            key=rows.keys[key[first]], provider=provider, model=model, sessions=[rows.names[s] for s in sessions],
            time=_column("d", time[idx]), file=_column("i", file[idx]), offset=_column("q", offset[idx]),
            length=_column("q", length[idx]), line=_column("q", line[idx]), session=_column("i", local),
            pred_file=_column("i", np.where(has, file[at], -1)), pred_offset=_column("q", np.where(has, offset[at], 0)),
            pred_same=(has & (part_no[at] == p)).tobytes(), cross=cross[idx].tobytes())))
    return [Task(names, labels, b, max_line, prices=table) for b in batches if b]


def _names(rows: Rows, i: int) -> tuple[str, str]:
    """The provider and model of row ``i``."""
    return str(rows.names[rows.provider[i]]), str(rows.names[rows.model[i]])


_DTYPES = {"i": "int32", "q": "int64", "d": "float64"}


def _column(typecode: str, values: Any) -> Any:
    """A numpy column as an ``array`` of ``typecode`` (the workers' rows need no numpy)."""
    import numpy as np

    out = array(typecode)
    out.frombytes(np.ascontiguousarray(values, dtype=_DTYPES[typecode]).tobytes())
    return out


def _cross(partial: Partial, prices: Prices, names: list[str]) -> None:
    """Requests whose session predecessor sits in another partition (the
    model, params or first segment changed): lost tokens from both prompt
    lengths, the breaks from the two lines' fix list (else from their heads)."""
    memo: dict[tuple[Any, ...], tuple[str, str | None, tuple[str, str, str]]] = {}
    for c in sorted(partial.cross_children, key=lambda c: (c.time, c.label, c.line)):
        p = partial.cross_preds.get(c.pred_loc)
        if p is None:
            continue
        if c.time > p.until:
            continue  # nothing the predecessor wrote was alive: the change cost nothing
        cm = cache_models.get(c.provider, c.model)
        ideal = min(c.prompt, cm.reusable(min(p.prompt, c.prompt), c.prompt))
        lost = ideal - c.read
        if lost <= 0:
            continue
        if (p.provider, p.model) != (c.provider, c.model):
            got = ("params_changed", f"model changed: {p.model} → {c.model}", ("params", "", "model"))
        else:
            key = (p.params, c.params, tuple(s.data for s in p.head), tuple(s.data for s in c.head))
            got = memo.get(key)  # type: ignore[assignment]
            if got is None:
                if p.params != c.params:
                    ps, cs = [Segment("params", 0, "", p.params)], [Segment("params", 0, "", c.params)]
                else:
                    ps, cs = list(p.head), list(c.head)
                if not ps or not cs:
                    got = ("messages_rewritten", None, ("message", "", ""))
                else:
                    cause = classify(ps, cs, 0)
                    got = (cause.kind, cause.detail, where_of(ps[0], cs[0]))
                if len(memo) < 20_000:
                    memo[key] = got
        listed = _fix_list_at(names, p.loc, c.loc) if (p.provider, p.model) == (c.provider, c.model) else []
        if listed:  # every break, as `fidelity diff` lists them: the first carries the loss
            got = (listed[0][0], listed[0][1], listed[0][2])
        kind, detail, (wk, ptr, label) = got
        partial.add_break(Break(cause=kind, change=change_label(detail), detail=detail or "", where_kind=wk,
                                behind=tuple((c_, change_label(d), *w) for c_, d, w in listed[1:]),
                                pointer=ptr, label=label, provider=c.provider, model=c.model, day=c.day, lost=lost,
                                time=c.time, parent=p.where, child=(c.label, c.line), parent_loc=p.loc,
                                child_loc=c.loc,
                                usd_nano=prices.lost_nano(c.provider, c.model, lost, prompt=c.prompt, time=c.time)))
    partial.cross_children.clear()
    partial.cross_preds.clear()


def _fix_list_at(names: list[str], p_loc: tuple[int, int, int], c_loc: tuple[int, int, int]
                 ) -> list[tuple[str, str, tuple[str, str, str]]]:
    """The fix list of the child line at ``c_loc`` against the parent line at
    ``p_loc`` (file, offset, length), as the replay counts them; empty for
    lines of two dialects."""
    from ..cache._breakpoints import BreakpointCache
    from ..cache.anthropic_blocks import strip_markers
    from ..cache.items import encode
    from .partition import listed_breaks, view_of
    from .records import parse_record

    recs = [parse_record(_line_at(names, loc)) for loc in (p_loc, c_loc)]
    p_rec, c_rec = recs
    explicit = isinstance(cache_models.get(c_rec.provider, c_rec.model), BreakpointCache)
    segs = []
    for rec in recs:
        view = view_of(rec)
        data = encode(view.items, normalise=view.normalise)
        segs.append([Segment("params", 0, "", view.params)] + [
            Segment(it.kind, it.index, it.pointer, strip_markers(d) if explicit else d)  # type: ignore[arg-type]
            for it, d in zip(view.items, data)])
    return listed_breaks(p_rec, c_rec, c_rec.model, segs[0], segs[1])


def _line_at(names: list[str], loc: tuple[int, int, int]) -> bytes:
    """The log line at ``loc`` (file, offset, length)."""
    f, off, length = loc
    with open(names[f], "rb") as fh:
        fh.seek(off)
        return fh.read(length)


def _write_examples(partial: Partial, names: list[str], folder: str | Path,
                    top: int) -> dict[tuple[str, ...], tuple[str, str]]:
    """Each top change's example pair as two body files ``fidelity diff`` reads
    (credentials redacted first)."""
    from dataclasses import replace

    import orjson

    from ..capture import snapshot
    from ..capture.redact import Redactor
    from .aggregate import _group, _ranked
    from .records import parse_record

    out: dict[tuple[str, ...], tuple[str, str]] = {}
    folder = Path(folder) / "examples"
    for rank, (k, _) in enumerate(_ranked(_group(partial.changes, 5))[:top], start=1):
        ex = partial.examples[k]
        paths = []
        for n, (side, loc) in enumerate((("parent", ex.parent_loc), ("child", ex.child_loc)), start=1):
            line = _line_at(names, loc)
            rec = parse_record(line)
            meta = orjson.loads(line)
            url = meta.get("url") if isinstance(meta.get("url"), str) else ""
            r = Redactor()
            snap = snapshot.from_request(method="POST", url=url, headers=[], body=body_of(rec), redactor=r, seq=n,
                                         source=f"scan example {rank} ({side})")
            snap = replace(snap, provider=rec.dialect.name, family=rec.provider, model=rec.model)
            paths.append(str(snapshot.write(folder, snap, name=f"{rank:02d}-{side}{snapshot.SUFFIX}", redactor=r)))
        out[k] = (paths[0], paths[1])
    return out
