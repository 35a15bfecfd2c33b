"""What the scan keeps holds its own bytes only.

``orjson.dumps`` hands back a ``bytes`` object that keeps the whole buffer
it grew while writing (4 KiB at least from orjson 3.12:
:func:`fidelity.cache.items.trimmed`). The scan keeps many of them (each
unique segment of a partition, each memo key), so it keeps copies of their
own size; these tests fail if raw orjson output is kept again.
"""

from __future__ import annotations

import inspect
import tracemalloc
from pathlib import Path
from typing import Any

import orjson
import pytest
from hypothesis import given
from hypothesis import strategies as st

from fidelity.cache import items as view
from fidelity.cache.memo import TokenMemo
from fidelity.scan import partition, scan, synthetic
from fidelity.scan.segments import SegmentBytes

_text = st.text(st.characters(blacklist_categories=("Cs",)), max_size=40)  # orjson refuses lone surrogates
json_values = st.recursive(
    st.none() | st.booleans() | st.integers(-(2**63), 2**64 - 1) | _text,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(_text, inner, max_size=4),
    max_leaves=20)


@given(data=st.binary(max_size=5000))
def test_trimmed_is_the_same_bytes(data: bytes) -> None:
    got = view.trimmed(data)
    assert got == data and type(got) is bytes


@given(value=json_values)
def test_dumps_value_is_orjsons_bytes(value: Any) -> None:
    assert view.dumps_value(value) == orjson.dumps(value)


@given(chunks=st.lists(st.binary(max_size=40), max_size=60), flush=st.integers(1, 200))
def test_segment_numbers_and_bytes_round_trip(chunks: list[bytes], flush: int) -> None:
    """Equal bytes get one number, different bytes different ones, numbered
    in order of first sight; each number gives its bytes back, from the
    buffer or from the file (a flush every ``flush`` bytes)."""
    seg = SegmentBytes(flush_bytes=flush)
    try:
        got = [seg.number(c) for c in chunks]
        first = list(dict.fromkeys(chunks))
        assert got == [first.index(c) for c in chunks]
        assert len(seg) == len(first)
        assert [seg[i] for i in range(len(seg))] == first
        assert [seg.number(c) for c in chunks] == got  # asked again: the same numbers, nothing added
        assert len(seg) == len(first)
        with pytest.raises(IndexError):
            seg[len(seg)]
    finally:
        seg.close()


def test_an_append_file_gives_back_what_was_appended() -> None:
    from fidelity.cache.append_file import AppendFile

    f = AppendFile()
    try:
        at = [f.append(b) for b in (b"abc", bytearray(b""), memoryview(b"defg"), b"h" * 70_000)]
        assert at == [0, 3, 3, 7] and f.size == 70_007
        assert f.read(3, 4) == b"defg" and f.read(0, 0) == b"" and f.read(7, 70_000) == b"h" * 70_000
        with pytest.raises(OSError):
            f.read(70_000, 100)  # past the end
    finally:
        f.close()


def test_segment_bytes_live_in_a_file_not_in_memory() -> None:
    """2,000 distinct 1 KB segments: the process keeps their digests and
    offsets and one partial buffer (well under their 2 MB), the file their bytes."""
    seg = SegmentBytes(flush_bytes=64 * 1024)
    blobs = [bytes([i % 251]) * 1000 + i.to_bytes(4, "little") for i in range(2000)]
    tracemalloc.start()
    try:
        before = tracemalloc.get_traced_memory()[0]
        for b in blobs:
            seg.number(b)
        held = tracemalloc.get_traced_memory()[0] - before
    finally:
        tracemalloc.stop()
    try:
        assert held < 500_000, held  # kept in memory: 2,008,000 bytes
        assert seg[0] == blobs[0] and seg[1999] == blobs[1999] and seg[1234] == blobs[1234]
    finally:
        seg.close()


def _traced(make: Any, n: int = 2000) -> int:
    """Bytes still allocated after keeping ``n`` results of ``make(i)``."""
    tracemalloc.start()
    try:
        before = tracemalloc.get_traced_memory()[0]
        kept = [make(i) for i in range(n)]
        after = tracemalloc.get_traced_memory()[0]
    finally:
        tracemalloc.stop()
    assert len(kept) == n
    return after - before


def test_kept_segments_cost_about_their_length() -> None:
    """2,000 segments of about 120 bytes: their length and a small header
    each (plus the list), where raw orjson output would keep a buffer each."""
    value = {"role": "user", "content": "x" * 90}
    size = len(orjson.dumps(value))
    got = _traced(lambda i: view.dumps_value({**value, "i": i}))
    assert got < 2000 * (size + 64) + 64 * 1024, got


def test_the_memo_keeps_the_key_it_was_stored_with() -> None:
    """A hit re-inserts the entry under the stored key, not the caller's
    equal one (which may hold an oversized orjson buffer), and makes it the
    most recently used."""
    memo = TokenMemo(max_bytes=1 << 20)
    stored = ("d", "m", "message", view.trimmed(b'{"a":1}'), None)
    memo.put(stored, "ids", 100)
    memo.put(("other",), "x", 100)
    asked = ("d", "m", "message", orjson.dumps({"a": 1}), None)
    assert asked == stored and asked[3] is not stored[3]
    assert memo.get(asked) == "ids"
    keys = list(memo._memo)  # noqa: SLF001 -- the key objects themselves are the point
    assert keys[-1] is stored  # the most recently used, under its own key
    assert keys[0] == ("other",)


def _dumps_lines() -> list[tuple[str, int]]:
    """(file, line) of the ``orjson.dumps`` calls whose results the scan
    used to keep: the cache-view segments and the fast path's element bytes."""
    out = []
    for fn in (view.dumps_value,):
        src, start = inspect.getsourcelines(fn)
        line = next(start + i for i, text in enumerate(src) if "orjson.dumps(value)" in text)
        out.append((inspect.getsourcefile(fn), line))
    assert all(f is not None for f, _ in out)
    return out  # type: ignore[return-value]


def test_a_partition_in_replay_keeps_no_raw_orjson_output(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Mid-replay (its segments, lineages and the worker's memo all
    alive), what was allocated by ``orjson.dumps`` itself and is still held
    is at most a few transient objects, not one buffer per kept segment."""
    log = tmp_path / "log.jsonl"
    synthetic.write_log(str(log), 6_000_000, seed=3, apps=1)  # one app: one partition
    n_lines = sum(1 for _ in log.open("rb"))
    held: list[int] = []
    kept: list[int] = []
    lines = _dumps_lines()
    real = partition._State.lineage  # noqa: SLF001

    def lineage(self: Any, session: Any, continues: bool) -> Any:
        self._seen = getattr(self, "_seen", 0) + 1
        if self._seen == 120:  # well into the partition's replay
            snap = tracemalloc.take_snapshot()
            held.append(sum(s.size for f, ln in lines
                            for s in snap.filter_traces([tracemalloc.Filter(True, f, ln)]).statistics("filename")))
            kept.append(len(self.data))  # distinct segments numbered so far
        return real(self, session, continues)

    monkeypatch.setattr(partition._State, "lineage", lineage)  # noqa: SLF001
    monkeypatch.setattr(partition, "_MEMO", None)  # a fresh worker memo
    tracemalloc.start()
    try:
        doc = scan([log], workers=1, executor="local")
    finally:
        tracemalloc.stop()
    assert doc["totals"]["requests"] == n_lines
    assert held and kept and min(kept) > 100  # partitions holding a hundred segments and more
    assert max(held) < 256 * 1024, held  # raw output kept: 4 KiB and more per segment and memo key


def test_recorded_traffic_scans_alike_with_everything_spilled(shared_real: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """On the recorded bodies (SDK cassettes, public test suites' usage,
    DeepSeek Harness sessions): one request's ids in memory, every trie node
    sorted, each segment written to the file at once: the JSON of the
    ordinary scan, byte for byte."""
    from fidelity.cache import prefix_store
    from fidelity.scan import segments

    paths = [shared_real / "recorded-usage", shared_real / "cassettes", shared_real / "deepseek-harness"]
    paths = [p for p in paths if p.exists()]
    if not paths:
        pytest.skip("no recordings under ../shared/real")
    plain = orjson.dumps(scan(paths, workers=1))
    monkeypatch.setattr(partition, "RECORDS_IN_MEMORY", 1)
    monkeypatch.setattr(prefix_store, "_MANY", 0)
    monkeypatch.setattr(segments.SegmentBytes.__init__, "__defaults__", (1,))
    spilled = orjson.dumps(scan(paths, workers=1))
    assert orjson.loads(plain)["reported"]["requests"] > 0
    assert spilled == plain
