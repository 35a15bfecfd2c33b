"""The scan's index in columns (:mod:`fidelity.scan.entries`) and the
partitions the driver forms from it with numpy (``fidelity.scan._tasks``):
checked against the plain per-object algorithm they replaced, on drawn
indexes (keys, times with and without, sessions across partitions, sizes
that split at gaps or cannot)."""

from __future__ import annotations

from collections import defaultdict
from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from fidelity import cache as cache_models
from fidelity import pricing
from fidelity.scan import _tasks
from fidelity.scan.entries import Entry, Rows

_MODELS = [("openai", "gpt-4o"), ("deepseek", "deepseek-chat"), ("anthropic", "claude-sonnet-4-5")]
_KEYS = [bytes([i]) * 16 for i in (3, 1, 2, 9)]  # not in sorted order


@st.composite
def _entries(draw: Any) -> list[tuple[Any, ...]]:
    n = draw(st.integers(1, 60))
    out = []
    offsets: dict[int, int] = defaultdict(int)
    for line in range(1, n + 1):
        k = draw(st.integers(0, len(_KEYS) - 1))
        provider, model = _MODELS[k % len(_MODELS)]  # a key has one provider and model
        f = draw(st.integers(0, 1))
        length = draw(st.integers(1, 400))
        t = draw(st.one_of(st.none(), st.floats(0, 5000, allow_nan=False), st.sampled_from([0.0, 100.0])))
        session = draw(st.one_of(st.none(), st.sampled_from(["s1", "s2", "s3", ""])))
        out.append((_KEYS[k], t, f, offsets[f], length, line, session, provider, model))
        offsets[f] += length
    return out


def _reference(entries: list[Entry], workers: int, split_bytes: int) -> tuple[list[Any], list[str]]:
    """The partitions, as the driver formed them from one object per entry."""
    def order(e: Entry) -> tuple[float, int, int]:
        return (e.time if e.time is not None else 0.0, e.file, e.offset)

    notes: list[str] = []
    groups: dict[bytes, list[Entry]] = defaultdict(list)
    for e in entries:
        groups[e.key].append(e)
    parts: list[tuple[str, list[Entry]]] = []
    for key in sorted(groups):
        rows = sorted(groups[key], key=order)
        size = sum(e.length for e in rows)
        ttl = cache_models.get(rows[0].provider, rows[0].model).longest_ttl()
        if size > split_bytes and ttl is not None:
            cur, m = [rows[0]], 0
            for prev, e in zip(rows, rows[1:]):
                if (e.time or 0.0) - (prev.time or 0.0) > ttl:
                    parts.append((f"{key.hex()}#{m}", cur))
                    cur, m = [], m + 1
                cur.append(e)
            parts.append((f"{key.hex()}#{m}", cur))
        else:
            if size > split_bytes:
                notes.append(key.hex())
            parts.append((key.hex(), rows))
    part_of = {(e.file, e.offset): pid for pid, rows in parts for e in rows}
    pred: dict[tuple[int, int], tuple[int, int]] = {}
    cross: set[tuple[int, int]] = set()
    by_session: dict[str, list[Entry]] = defaultdict(list)
    for e in entries:
        if e.session is not None:
            by_session[e.session].append(e)
    for rows in by_session.values():
        rows.sort(key=order)
        for a, b in zip(rows, rows[1:]):
            pred[(b.file, b.offset)] = (a.file, a.offset)
            if part_of[(a.file, a.offset)] != part_of[(b.file, b.offset)]:
                cross.add((a.file, a.offset))
    n_batches = max(1, min(len(parts), workers * 4))
    batches: list[list[Any]] = [[] for _ in range(n_batches)]
    load = [0] * n_batches
    for pid, rows in sorted(parts, key=lambda p: (-sum(e.length for e in p[1]), p[0])):
        i = min(range(n_batches), key=lambda j: (load[j], j))
        load[i] += sum(e.length for e in rows)
        items = []
        for e in rows:
            p = pred.get((e.file, e.offset))
            items.append((e, p, p is not None and part_of[p] == pid, (e.file, e.offset) in cross))
        batches[i].append((pid, rows[0].provider, rows[0].model, items))
    return [b for b in batches if b], notes


@given(entries=_entries(), chunks=st.lists(st.integers(1, 20), max_size=4), workers=st.integers(1, 3),
       split=st.sampled_from([1, 500, 10**9]))
def test_partitions_from_columns_equal_the_per_object_ones(entries: list[tuple[Any, ...]], chunks: list[int],
                                                           workers: int, split: int) -> None:
    """Rows merged chunk by chunk (line numbers counted on, keys and names
    renumbered) give back every entry, and the tasks formed from them hold
    the partitions, rows, predecessors and flags, batches and notes of the
    per-object algorithm."""
    rows, at, base = Rows(), 0, 0
    for size in [*chunks, len(entries)]:
        chunk = Rows()
        for key, t, f, off, length, line, session, provider, model in entries[at:at + size]:
            chunk.append(key, t, f, off, length, line - base, session, provider, model)
        rows.extend(chunk, base)
        at += size
        base = at
        if at >= len(entries):
            break
    assert list(rows) == entries
    assert rows.models() == {(e[7], e[8]) for e in entries}

    notes: list[str] = []
    tasks = _tasks(rows, ["a", "b"], ["a", "b"], workers, split, 1 << 20, pricing.load(), notes)
    want, want_notes = _reference([Entry(*e) for e in entries], workers, split)
    got = [[(pid, provider, model, list(part)) for pid, provider, model, part in t.partitions] for t in tasks]
    assert got == want
    assert len(notes) == len(want_notes) and all("replayed whole by one worker" in n for n in notes)


def test_a_row_without_a_time_or_session_comes_back_as_none() -> None:
    rows = Rows()
    rows.append(b"k" * 16, None, 0, 0, 10, 1, None, "openai", "gpt-4o")
    rows.append(b"k" * 16, 0.0, 0, 10, 10, 2, "", "openai", "gpt-4o")
    assert rows[0][1] is None and rows[0][6] is None
    assert rows[1][1] == 0.0 and rows[1][6] == ""
