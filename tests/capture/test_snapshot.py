"""Snapshot format: exact bytes round-trip, load_body on both forms,
pairing rules, and one-line errors for damaged files."""

from __future__ import annotations

from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from fidelity.capture import snapshot
from fidelity.capture.snapshot import Snapshot
from fidelity.errors import InputError


@settings(max_examples=200, deadline=None)
@given(body=st.binary(max_size=300), seq=st.integers(1, 9999),
       headers=st.lists(st.tuples(st.sampled_from(["content-type", "anthropic-version", "user-agent"]),
                                  st.text(max_size=20)), max_size=3, unique_by=lambda t: t[0]))
def test_round_trip_is_byte_exact(body: bytes, seq: int, headers: list[tuple[str, str]]) -> None:
    snap = Snapshot(body=body, seq=seq, provider="openai-chat", family="openai", model="m", headers=tuple(headers))
    back = snapshot.loads(snapshot.dumps(snap))
    assert back.body == body and back.seq == seq and back.headers == tuple(headers)
    assert snapshot.dumps(back) == snapshot.dumps(snap)


def test_load_body_accepts_raw_and_snapshot(tmp_path: Path) -> None:
    raw = tmp_path / "parent.json"
    raw.write_bytes(b'{"model": "m",\n "messages": []}')
    assert snapshot.load_body(raw) == (b'{"model": "m",\n "messages": []}', None)
    path = snapshot.write(tmp_path, Snapshot(body=b'{"model":"m"}\n', provider="openai-chat", model="m"))
    body, meta = snapshot.load_body(path)
    assert body == b'{"model":"m"}\n' and meta is not None and meta.provider == "openai-chat"
    assert path.read_bytes().split(b"\n", 1)[1] == body  # `tail -n +2` gives the body


def test_editor_newline_is_tolerated_but_truncation_is_not(tmp_path: Path) -> None:
    path = snapshot.write(tmp_path, Snapshot(body=b'{"a":1}'))
    path.write_bytes(path.read_bytes() + b"\n")
    assert snapshot.read(path).body == b'{"a":1}'
    path.write_bytes(path.read_bytes()[:-3])
    with pytest.raises(InputError, match=r"snapshot body is \d+ bytes, metadata says 7"):
        snapshot.read(path)


@pytest.mark.parametrize("data,problem", [
    (b'{"fidelity_snapshot":1,"seq":1', "no body"),
    (b'{"fidelity_snapshot":2,"body_length":0}\n', "unsupported snapshot format version 2"),
    (b'{"fidelity_snapshot":1}\n', "body_length"),
    (b'{"fidelity_snapshot":1,,}\n{}', "not valid JSON"),
])
def test_bad_files_name_the_problem(tmp_path: Path, data: bytes, problem: str) -> None:
    p = tmp_path / "x.snapshot"
    p.write_bytes(data)
    with pytest.raises(InputError) as info:
        snapshot.read(p)
    assert problem in str(info.value) and str(p) in str(info.value) and "\n" not in str(info.value)


def test_pairs_consecutive_explicit_parent_and_root(tmp_path: Path) -> None:
    w = snapshot.SnapshotWriter(tmp_path)
    a = w.write(Snapshot(body=b'{"n":1}'))
    b = w.write(Snapshot(body=b'{"n":2}'))
    c = w.write(Snapshot(body=b'{"n":3}', parent=a.name))  # a fork of the first request
    d = w.write(Snapshot(body=b'{"n":4}', parent=None))  # a fresh conversation
    e = w.write(Snapshot(body=b'{"n":5}'))
    pairs = [(p.path.name, c_.path.name) for p, c_ in snapshot.pairs_in_folder(tmp_path)]
    assert pairs == [(a.name, b.name), (a.name, c.name), (d.name, e.name)]
    first = next(iter(snapshot.pairs_in_folder(tmp_path)))
    assert first[0].body == b'{"n":1}' and first[1].body == b'{"n":2}'


def test_raw_json_folder_in_natural_order(tmp_path: Path) -> None:
    for n in (10, 2, 1):
        (tmp_path / f"req{n}.json").write_bytes(b'{"n":%d}' % n)
    names = [(p.path.name, c.path.name) for p, c in snapshot.pairs_in_folder(tmp_path)]
    assert names == [("req1.json", "req2.json"), ("req2.json", "req10.json")]


def test_missing_parent_is_input_error(tmp_path: Path) -> None:
    snapshot.write(tmp_path, Snapshot(body=b"{}", parent="nope.snapshot"))
    with pytest.raises(InputError, match="parent 'nope.snapshot' is not in this folder"):
        list(snapshot.pairs_in_folder(tmp_path))


def test_describe_uses_host_then_body() -> None:
    assert snapshot.describe("https://api.deepseek.com/chat/completions", b'{"model":"deepseek-chat","messages":[]}') \
        == ("deepseek", "deepseek", "deepseek-chat")
    assert snapshot.describe("https://generativelanguage.googleapis.com/v1beta/models/gemini-2.5-pro:streamGenerateContent",
                             b'{"contents":[]}') == ("gemini", "gemini", "gemini-2.5-pro")
