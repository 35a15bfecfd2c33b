"""The scan's per-request work follows what is new: the line reader, the
incremental cache view and the per-session lineages give exactly what the
plain versions give."""

from __future__ import annotations

import json
from array import array
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from fidelity import wire
from fidelity.cache.items import build_view, common_prefix, shared_items, view_after
from fidelity.scan import partition, scan, synthetic
from fidelity.scan.records import iter_lines

# -- the line reader ------------------------------------------------------------


def _reference_lines(data: bytes, limit: int) -> list[tuple[int, bytes | None]]:
    out: list[tuple[int, bytes | None]] = []
    pos = 0
    while pos < len(data):
        nl = data.find(b"\n", pos)
        nxt = len(data) if nl < 0 else nl + 1
        content = (len(data) if nl < 0 else nl) - pos
        out.append((pos, None if content > limit else data[pos:nxt]))
        pos = nxt
    return out


@settings(max_examples=200)
@given(lines=st.lists(st.binary(max_size=30).map(lambda b: b.replace(b"\n", b"x")), max_size=12),
       final_newline=st.booleans(), limit=st.integers(0, 25),
       cuts=st.lists(st.integers(0, 400), max_size=5))
def test_chunks_of_a_file_yield_every_line_once(tmp_path_factory: Any, lines: list[bytes], final_newline: bool,
                                                limit: int, cuts: list[int]) -> None:
    data = b"\n".join(lines) + (b"\n" if final_newline and lines else b"")
    path = tmp_path_factory.mktemp("lines") / "log.jsonl"
    path.write_bytes(data)
    bounds = sorted({0, *(c for c in cuts if c < len(data))})
    got: list[tuple[int, bytes | None]] = []
    for a, b in zip(bounds, [*bounds[1:], None]):
        got.extend(iter_lines(path, a, b, limit))
    assert got == _reference_lines(data, limit)


# -- the incremental view ---------------------------------------------------------

_text = st.text(alphabet="abc xyz\n", max_size=12)
_msg = st.fixed_dictionaries({"role": st.sampled_from(["user", "assistant", "tool"]), "content": _text})
_tool = st.builds(lambda n, d: {"type": "function", "function": {"name": n, "description": d}},
                  st.sampled_from(["a", "b", "c"]), _text)
_atool = st.builds(lambda n, d: {"name": n, "description": d, "input_schema": {"type": "object"}},
                   st.sampled_from(["a", "b", "c"]), _text)


@st.composite
def _sessions(draw: Any, dialect: str) -> list[dict[str, Any]]:
    """A session's bodies: each re-sends the previous history with edits
    (append, change one message, change tools or the system prompt)."""
    anthropic = dialect == "anthropic-messages"
    tools = draw(st.lists(_atool if anthropic else _tool, max_size=3))
    system = draw(_text)
    msgs = draw(st.lists(_msg, min_size=1, max_size=4))
    out = []
    for _ in range(draw(st.integers(1, 5))):
        if anthropic:
            sys_v: Any = draw(st.sampled_from([system, [{"type": "text", "text": system}], None]))
            body: dict[str, Any] = {"model": "m", "messages": [{"role": "user", "content": m["content"]}
                                                                for m in msgs], "tools": tools}
            if sys_v is not None:
                body["system"] = sys_v
        else:
            n_sys = draw(st.integers(0, 2))
            body = {"model": "m", "messages": [{"role": "system", "content": system}] * n_sys + msgs}
            if tools or draw(st.booleans()):
                body["tools"] = tools
        out.append(body)
        edit = draw(st.sampled_from(["append", "append", "change", "tools", "system"]))
        if edit == "append":
            msgs = msgs + draw(st.lists(_msg, min_size=1, max_size=3))
        elif edit == "change":
            i = draw(st.integers(0, len(msgs) - 1))
            msgs = [*msgs[:i], draw(_msg), *msgs[i + 1:]]
        elif edit == "tools":
            tools = draw(st.lists(_atool if anthropic else _tool, max_size=3))
        else:
            system = draw(_text)
    return out


@pytest.mark.parametrize("dialect", ["openai-chat", "deepseek", "anthropic-messages", "openai-responses"])
@settings(max_examples=200)
@given(data=st.data())
def test_incremental_view_equals_the_whole_view(dialect: str, data: Any) -> None:
    d = wire.get(dialect)
    bodies = data.draw(_sessions("anthropic-messages" if dialect == "anthropic-messages" else "openai-chat"))
    if dialect == "openai-responses":
        bodies = [{"model": "m", "input": b["messages"], "tools": b.get("tools", [])} for b in bodies]
    prev = None
    for body in bodies:
        view, k = view_after(d, body, prev)
        whole = build_view(d, body)
        assert view.items == whole.items
        assert (view.params, view.normalise) == (whole.params, whole.normalise)
        assert k == (shared_items(whole.items, prev.items) if prev is not None else 0)
        prev = view


@settings(max_examples=200)
@given(a=st.lists(st.integers(0, 3), max_size=40), b=st.lists(st.integers(0, 3), max_size=40))
def test_common_prefix_of_id_arrays(a: list[int], b: list[int]) -> None:
    n = 0
    while n < min(len(a), len(b)) and a[n] == b[n]:
        n += 1
    assert common_prefix(array("q", a), array("q", b)) == n == common_prefix(a, b)


# -- lineages ---------------------------------------------------------------------


def test_the_lineage_kept_changes_speed_never_the_result(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Interleaved sessions compared with their own previous request, or
    all with the partition's previous request (one lineage): the same JSON."""
    log = tmp_path / "mixed.jsonl"
    synthetic.write_log(str(log), 1_500_000, seed=3)
    kept = json.dumps(scan([log], workers=1), sort_keys=True)
    monkeypatch.setattr(partition, "LINEAGES", 0)
    one = json.dumps(scan([log], workers=1), sort_keys=True)
    assert kept == one
    assert json.loads(kept)["totals"]["breaks"] > 0


# -- parsing a line against an earlier one ----------------------------------------

_msg_value = st.recursive(
    st.one_of(st.none(), st.booleans(), st.integers(-3, 3), st.text(alphabet='ab"\\\n ]', max_size=5)),
    lambda inner: st.one_of(st.lists(inner, max_size=3),
                            st.dictionaries(st.sampled_from(["role", "content", "messages", "x"]), inner, max_size=3)),
    max_leaves=6)
_message = st.one_of(_msg, st.builds(lambda m, v: {**m, "extra": v}, _msg, _msg_value), st.integers(0, 2))


@st.composite
def _line_pairs(draw: Any) -> tuple[bytes, bytes]:
    """Two log lines of a session: the second edits, extends or reshapes the first's."""
    msgs = draw(st.lists(_message, min_size=1, max_size=6))
    later = list(msgs)
    edit = draw(st.sampled_from(["append", "change", "first", "drop", "same", "other"]))
    if edit == "append":
        later += draw(st.lists(_message, min_size=1, max_size=3))
    elif edit == "first":  # the first message changes (a timestamp in a system prompt), the rest grows
        later[0] = draw(_message)
        later += draw(st.lists(_message, max_size=2))
    elif edit == "change":
        later[draw(st.integers(0, len(later) - 1))] = draw(_message)
    elif edit == "drop":
        later = later[:draw(st.integers(0, len(later) - 1))]
    elif edit == "other":
        later = draw(st.lists(_message, max_size=4))
    url = draw(st.sampled_from(["https://api.openai.com/v1/chat/completions", "https://api.anthropic.com/v1/messages",
                                None]))
    # the members cut like the messages: kept, changed, moved, dropped, or
    # also held inside a message (the same bytes in the wrong place)
    members = [(name, draw(_msg_value)) for name in ("tools", "system") if draw(st.integers(0, 3))]
    member_edit = draw(st.sampled_from(["same"] * 5 + ["change", "move", "drop", "decoy"]))

    def line(ms: list[Any], t: int) -> bytes:
        body: dict[str, Any] = {"model": "gpt-4.1", "messages": ms}
        if draw(st.booleans()):
            body = {"tools": [{"messages": ms[:1]}], **body}  # another array of the same name, ahead
        for name, value in members:
            if t == 2 and member_edit == "change":
                value = draw(_msg_value)
            if t == 2 and member_edit == "drop":
                continue
            ahead = draw(st.booleans()) if t == 1 or member_edit == "move" else name in first_ahead
            if ahead and t == 1:
                first_ahead.add(name)
            if ahead:
                body = {name: value, **body}
            else:
                body[name] = value
            if t == 2 and member_edit == "decoy":
                body["messages"] = [*ms, {"role": "user", "content": "x", name: value}]
        shape = draw(st.sampled_from(["object", "object", "text", "envelope", "bare", "spaced", "after"]))
        if shape == "bare":
            return json.dumps(body, separators=(",", ":")).encode()
        env: dict[str, Any] = {"time": t, "url": url, "session": "s"}
        if shape == "text":
            env["body"] = json.dumps(body, separators=(",", ":"))
        elif shape == "envelope":
            env = {"request": {"url": url, "body": body}, "time": t}
        else:
            env["body"] = body
        if shape == "after":
            env["response"] = {"messages": ms}  # the same array again, behind the body
        if shape == "spaced":
            return json.dumps(env).encode()
        return json.dumps(env, separators=(",", ":"), ensure_ascii=draw(st.booleans())).encode()

    first_ahead: set[str] = set()
    return line(msgs, 1), line(later, 2)


def _fields(rec: Any) -> tuple[Any, ...]:
    return (rec.time, rec.day, rec.dialect.name, rec.provider, rec.model, rec.body, rec.usage, rec.session,
            rec.raw_body, rec.url, rec.detected)


@settings(max_examples=300)
@given(pair=_line_pairs())
def test_a_line_parsed_after_another_equals_its_whole_parse(pair: tuple[bytes, bytes]) -> None:
    from fidelity.scan.records import BadLine, parse_record
    from fidelity.scan.splice import parse_after

    first, second = pair
    try:
        whole = parse_record(second)
    except BadLine as exc:
        with pytest.raises(BadLine) as got:
            parse_after(second, parse_after(first, None))
        assert got.value.reason == exc.reason
        return
    try:
        ref = parse_after(first, None)
    except BadLine:
        ref = None
    parsed = parse_after(second, ref)
    assert _fields(parsed.rec) == _fields(whole)
    if parsed.start >= 0:  # the spans it keeps are where the messages are
        msgs = parsed.rec.body["messages"]
        assert len(parsed.ends) == len(msgs)
        for i, end in enumerate(parsed.ends):
            begin = parsed.start + (parsed.ends[i - 1] + 1 if i else 0)
            assert json.loads(second[begin:parsed.start + end]) == msgs[i]


_param = st.one_of(st.integers(0, 2), st.floats(0, 2, allow_nan=False).filter(lambda f: f in (0.0, 1.0, 2.0, 0.5)),
                   st.booleans(), st.none(), st.dictionaries(st.sampled_from(["a", "b"]), st.integers(0, 1), max_size=2))


@st.composite
def _continued_lines(draw: Any) -> tuple[bytes, bytes]:
    """Two lines of a session whose second re-sends the first's history,
    with its other body members kept, retyped (``1`` -> ``1.0``), reordered,
    changed, added or dropped."""
    msgs = draw(st.lists(_msg, min_size=1, max_size=4))
    later = msgs + draw(st.lists(_msg, max_size=2))
    params = draw(st.dictionaries(st.sampled_from(["temperature", "metadata", "stream", "top_p"]), _param, max_size=3))
    tools = draw(st.one_of(st.none(), st.just([{"name": "read", "input_schema": {}}])))
    edit = draw(st.sampled_from(["same", "same", "retype", "reorder", "change", "add", "drop", "tools", "model"]))
    late = dict(params)
    if edit == "retype" and late:
        k = sorted(late)[0]
        v = late[k]
        late[k] = float(v) if type(v) is int else int(v) if type(v) is float and v.is_integer() else v
    elif edit == "reorder":
        late = dict(reversed(list(late.items())))
    elif edit in ("change", "add"):
        late[draw(st.sampled_from(["temperature", "top_k"]))] = draw(_param)
    elif edit == "drop" and late:
        late.pop(sorted(late)[0])
    url = draw(st.sampled_from(["https://api.openai.com/v1/chat/completions", "https://api.anthropic.com/v1/messages"]))

    def line(ms: list[Any], ps: dict[str, Any], t: int, model: str, tl: Any) -> bytes:
        body: dict[str, Any] = {"model": model, **({"tools": tl} if tl else {}), "messages": ms, **ps}
        return json.dumps({"time": t, "url": url, "session": "s", "body": body}, separators=(",", ":")).encode()

    second_tools = [{"name": "write", "input_schema": {}}] if edit == "tools" else tools
    model = "claude-sonnet-4-5" if "anthropic" in url else "gpt-4.1"
    second_model = "claude-opus-4-5" if edit == "model" and "anthropic" in url else \
        "gpt-4o" if edit == "model" else model
    return line(msgs, params, 1, model, tools), line(later, late, 2, second_model, second_tools)


@settings(max_examples=300)
@given(pair=_continued_lines())
def test_the_index_reuses_a_session_key_only_where_the_view_would_give_it(tmp_path_factory: Any,
                                                                           pair: tuple[bytes, bytes]) -> None:
    """The index pass takes a continued line's partition key from its
    session's previous line when the splice kept its head: the same keys as
    each line indexed alone (whose view is built)."""
    folder = tmp_path_factory.mktemp("index")
    both, alone = folder / "both.jsonl", folder / "alone.jsonl"
    both.write_bytes(pair[0] + b"\n" + pair[1] + b"\n")
    alone.write_bytes(pair[1] + b"\n")
    rows, bad, n, _ = partition.index_chunk(str(both), 0, 0, None)
    assert n == 2 and not bad
    first_alone, _, _, _ = partition.index_chunk(str(both), 0, 0, len(pair[0]) + 1)
    second_alone, _, _, _ = partition.index_chunk(str(alone), 0, 0, None)
    assert [r[0] for r in rows] == [first_alone[0][0], second_alone[0][0]]


def test_the_index_reuses_the_key_of_an_unchanged_head(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """The shortcut is taken (a growing session's lines build one view, the
    first), and a retyped parameter is not the same head."""
    built: list[Any] = []
    real = partition.view_of
    monkeypatch.setattr(partition, "view_of", lambda rec, first_only=False: built.append(rec) or real(rec, first_only))
    msgs: list[Any] = []
    lines = []
    for t in range(5):
        msgs = [*msgs, {"role": "user", "content": f"turn {t}"}]
        temperature = 1.0 if t == 4 else 1
        body = {"model": "gpt-4.1", "messages": msgs, "temperature": temperature}
        lines.append(json.dumps({"time": t, "url": "https://api.openai.com/v1/chat/completions", "session": "s",
                                 "body": body}, separators=(",", ":")).encode())
    log = tmp_path / "log.jsonl"
    log.write_bytes(b"\n".join(lines) + b"\n")
    rows, _, _, _ = partition.index_chunk(str(log), 0, 0, None)
    assert len(built) == 2  # the first line, and the one whose temperature is 1.0
    # (OpenAI's cache key leaves the temperature out: the view gives the same key)
    assert len({r[0] for r in rows}) == 1


@settings(max_examples=200)
@given(msgs=st.lists(_message, min_size=2, max_size=6), first=_message, more=st.lists(_message, max_size=3),
       ascii_only=st.booleans(), url=st.sampled_from(["https://api.openai.com/v1/chat/completions",
                                                      "https://api.anthropic.com/v1/messages"]))
def test_a_changed_first_message_keeps_the_rest_reused(msgs: list[Any], first: Any, more: list[Any],
                                                       ascii_only: bool, url: str) -> None:
    """The first message changes (a timestamp in a system prompt), the
    rest of the history is re-sent: the parse equals the whole parse and
    takes the rest from the earlier line."""
    from fidelity.scan.records import parse_record
    from fidelity.scan.splice import parse_after

    def line(ms: list[Any], t: int) -> bytes:
        env = {"time": t, "url": url, "session": "s", "body": {"model": "gpt-4.1", "messages": ms}}
        return json.dumps(env, separators=(",", ":"), ensure_ascii=ascii_only).encode()

    later = [first, *msgs[1:], *more]
    ref = parse_after(line(msgs, 1), None)
    parsed = parse_after(line(later, 2), ref)
    assert _fields(parsed.rec) == _fields(parse_record(line(later, 2)))
    if ref.start >= 0 and parsed.start >= 0:
        assert parsed.reused >= len(msgs) - 1  # all but the first: the same objects as the earlier line's
        assert all(a is b for a, b in zip(parsed.rec.body["messages"][1:len(msgs)], ref.rec.body["messages"][1:]))


def test_a_growing_session_reuses_its_history() -> None:
    """On a generated log, every line after a session's first is parsed from
    where it parts from the previous one."""
    from fidelity.scan.splice import parse_after

    refs: dict[str, Any] = {}
    reused = later = members = 0
    for raw in synthetic.generate(2_000_000, seed=5, append_only=True):
        session = json.loads(raw)["session"]
        prev = refs.get(session)
        parsed = parse_after(raw, prev)
        refs[session] = parsed
        # (Anthropic's breakpoint moves off a session's only message: nothing to reuse)
        if prev is not None and len(prev.rec.body["messages"]) > 1:
            later += 1
            reused += parsed.reused > 0
            # an unchanged tools array or system prompt is the earlier line's own object
            for name in ("tools", "system"):
                if name in prev.rec.body and parsed.rec.body.get(name) == prev.rec.body[name]:
                    members += 1
                    assert parsed.rec.body[name] is prev.rec.body[name]
    assert later > 20
    assert reused == later
    assert members >= later


def test_the_example_in_docs_scan_fast_path_runs() -> None:
    import re

    doc = (Path(__file__).resolve().parents[2] / "docs" / "builder.md").read_text()
    blocks = re.findall(r"```python\n(.*?)```", doc, re.S)
    assert blocks
    for block in blocks:
        exec(compile(block, "docs/builder.md", "exec"), {})  # noqa: S102 -- the doc's own example


def test_the_segments_of_a_break_read_alike_by_index_slice_and_iteration() -> None:
    """The replay's lazy segments (made when the classifier reads them)."""
    from fidelity.cache.items import Item
    from fidelity.cache.memo import TokenMemo
    from fidelity.wire import Segment

    st = partition._State(TokenMemo())
    numbers = [st.data.number(b) for b in (b'{"a":1}', b'"sys"', b'{"role":"user"}')]
    items = [Item("tools", 0, ("tools", 0), {"a": 1}), Item("system", 0, ("system",), "sys"),
             Item("message", 0, ("messages", 0), {"role": "user"})]
    segs = partition._Segments(st, items, array("q", numbers))
    want = [Segment("tools", 0, "/tools/0", b'{"a":1}'), Segment("system", 0, "/system", b'"sys"'),
            Segment("message", 0, "/messages/0", b'{"role":"user"}')]
    assert list(segs) == want == [segs[i] for i in range(len(segs))] == segs[:]
    assert segs[-1] == want[-1] and segs[1:2] == want[1:2]
    with pytest.raises(IndexError):
        segs[3]


def test_tasks_run_with_rarer_collections_and_restore_the_thresholds(monkeypatch: pytest.MonkeyPatch,
                                                                      tmp_path: Path) -> None:
    import gc

    seen: list[tuple[int, ...]] = []
    real = partition.parse_after
    monkeypatch.setattr(partition, "parse_after", lambda *a: seen.append(gc.get_threshold()) or real(*a))
    log = tmp_path / "log.jsonl"
    log.write_bytes(json.dumps({"url": "https://api.openai.com/v1/chat/completions",
                                "body": {"model": "gpt-4.1", "messages": [{"role": "user", "content": "hi"}]}}).encode())
    before = gc.get_threshold()
    try:
        partition.index_chunk(str(log), 0, 0, None)
        assert gc.get_threshold() == before
        assert seen[-1] == tuple(max(a, b) for a, b in zip(before, partition.GC_THRESHOLDS))
        gc.set_threshold(0)  # automatic collection turned off stays off
        partition.index_chunk(str(log), 0, 0, None)
        assert seen[-1][0] == 0 and gc.get_threshold()[0] == 0
    finally:
        gc.set_threshold(*before)
