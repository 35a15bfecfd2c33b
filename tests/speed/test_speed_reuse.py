"""Work done once is reused, and reuse never changes a result (issue 15).

* ``fidelity diff`` parses each body once: the parse is handed from the
  pair's check to the detection and to ``compare`` (``jsonio.parsed_once``);
* the depth check works on bytes and equals the depth of the value;
* an array of sizeable containers is scanned in one pass that also records
  its element spans (``jsonbytes._skip_array``), with the spans and ends the
  two separate scans give;
* a child's text that shares a long prefix with its parent's reuses the
  parent's token ids chunk by chunk, and the ids equal a whole encoding.
"""

from __future__ import annotations

import json
import weakref
from pathlib import Path
from typing import Any

import pytest
from hypothesis import example, given
from hypothesis import strategies as st

from fidelity import jsonbytes, jsonio, tokens, wire
from fidelity.capture.snapshot import Loaded
from fidelity.diff import compare
from fidelity.errors import InputError
from fidelity.model import Message, Request, Route, SystemBlock, Text, ToolCall, ToolResult
from fidelity.pairs.folder import compare_pair


def _pair(turns: int = 30) -> tuple[bytes, bytes]:
    """An OpenAI Chat parent and a child that edits a late user message."""
    msgs: list[Message] = []
    for i in range(turns):
        msgs.append(Message("user", (Text(f"Open file {i}."),)))
        msgs.append(Message("assistant", (ToolCall(f"c{i}", "read", {"path": f"f{i}.py"},
                                                   json.dumps({"path": f"f{i}.py"})),)))
        msgs.append(Message("tool", (ToolResult(f"c{i}", "read", "def f():\n    return [1, {'a': \"b\"}]\n" * 16),)))
    parent = Request(Route("openai", "gpt-4o"), (SystemBlock("You are a coding agent."),), (), tuple(msgs))
    edited = list(msgs)
    edited[-3] = Message("user", (Text("Open it again."),))
    d = wire.get("openai-chat")
    return d.render(parent), d.render(Request(parent.route, parent.system, (), tuple(edited)))


# ---------------------------------------------------------------- one parse per body

def test_compare_pair_parses_each_body_once(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    parent, child = _pair()
    expected = compare(parent, child).to_json()
    texts = {parent.decode(): "parent", child.decode(): "child"}
    parsed: list[str] = []
    real = json.loads

    def counting(text: Any, *args: Any, **kwargs: Any) -> Any:
        if isinstance(text, str) and text in texts:
            parsed.append(texts[text])
        return real(text, *args, **kwargs)

    monkeypatch.setattr(json, "loads", counting)  # the module jsonio.loads calls
    res = compare_pair(Loaded(tmp_path / "p.json", parent, None), Loaded(tmp_path / "c.json", child, None))
    assert sorted(parsed) == ["child", "parent"]  # the main path parsed each three times before
    assert not isinstance(res, tuple) and res.to_json() == expected  # type: ignore[union-attr]


def test_compare_pair_still_names_the_bad_file(tmp_path: Path) -> None:
    parent, _ = _pair(2)
    with pytest.raises(InputError, match="duplicate key") as err:
        compare_pair(Loaded(tmp_path / "p.json", parent, None),
                     Loaded(tmp_path / "c.json", b'{"model":"m","model":"n","messages":[]}', None))
    assert "c.json" in str(err.value)


class _Tree(dict[str, Any]):
    """A parsed value that a weak reference can watch."""


def test_parsed_once_hands_over_without_keeping_the_value() -> None:
    body = b'{"model":"m","messages":[]}'
    value = _Tree(model="m", messages=[])
    watch = weakref.ref(value)
    with jsonio.parsed_once(body, value, once=True):
        del value
        taken = jsonio.loads(body)
        assert taken is watch()
        again = jsonio.loads(body)  # handed over once: parsed anew
        assert again == taken and again is not taken
        del taken
        assert watch() is None  # the block held no reference after the hand-over


# ---------------------------------------------------------------- depth on bytes

texts = st.text(alphabet=st.sampled_from(list('ab"\\[]{}:,é\n\u2028') + ["\U0001f600"]), max_size=8)
values = st.recursive(
    st.none() | st.booleans() | st.integers() | texts,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(texts, inner, max_size=4),
    max_leaves=24,
)


@given(value=values, ascii_only=st.booleans())
def test_text_depth_of_bytes_equals_depth_of_the_value(value: Any, ascii_only: bool) -> None:
    text = json.dumps(value, ensure_ascii=ascii_only)
    assert jsonio.text_depth(text.encode()) == jsonio.text_depth(text) == jsonio.depth(value)


# ---------------------------------------------------------------- one-pass array scan

messages = st.lists(
    st.one_of(
        st.fixed_dictionaries({"role": st.sampled_from(["user", "tool"]), "content": texts}),
        st.lists(st.integers(0, 9), max_size=3),
        st.integers(0, 99),  # a scalar among containers: the array falls back to one C scan
    ),
    max_size=12,
)


@given(msgs=messages, spaced=st.booleans(), probe=st.integers(1, 4), wide=st.integers(1, 40))
def test_one_pass_array_scan_gives_the_two_scans_results(msgs: list[Any], spaced: bool, probe: int, wide: int) -> None:
    # small thresholds so that generated arrays take each branch of _skip_array
    body = json.dumps({"model": "m", "messages": msgs, "tools": [{"n": 1}]}, ensure_ascii=False,
                      separators=(", ", ": ") if spaced else (",", ":")).encode()
    pointers = ["/messages", "/tools", "/tools/0"] + [f"/messages/{i}" for i in range(len(msgs))]
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(jsonbytes, "_PROBE", probe)
        mp.setattr(jsonbytes, "_WIDE_ELEMENT", wide)
        with jsonbytes.scan_memo():
            memo = (jsonbytes.value_spans(body, pointers), jsonbytes.element_spans(body, "/messages"),
                    jsonbytes.member_spans(body))
    plain = (jsonbytes.value_spans(body, pointers), jsonbytes.element_spans(body, "/messages"),
             jsonbytes.member_spans(body))
    assert memo == plain


def test_a_large_message_array_is_scanned_once(monkeypatch: pytest.MonkeyPatch) -> None:
    parent, _ = _pair(30)  # 90 messages of a few hundred bytes: above the probe's thresholds
    scanned: list[int] = []
    real = jsonbytes._skip_container

    def counting(body: bytes, pos: int) -> int:
        scanned.append(pos)
        return real(body, pos)

    monkeypatch.setattr(jsonbytes, "_skip_container", counting)
    with jsonbytes.scan_memo():
        spans = jsonbytes.element_spans(parent, "/messages")
    assert len(spans) == 91  # the system message and 90 turns
    assert len(scanned) == len(set(scanned)) == 91  # each message once; the array itself not again


@given(msgs=messages, at=st.floats(0, 1), insert=st.sampled_from(["1", "]", "{", "}", ",", " ", '"', "\\", "x"]),
       cut=st.booleans(), probe=st.integers(1, 4))
def test_a_second_body_reuses_only_what_it_shares(msgs: list[Any], at: float, insert: str, cut: bool,
                                                  probe: int) -> None:
    # the child: the parent's bytes with one edit (or cut short) anywhere, valid JSON or not
    parent = json.dumps({"model": "m", "messages": msgs, "n": 12}).encode()
    i = int(len(parent) * at)
    child = parent[:i] if cut else parent[:i] + insert.encode() + parent[i:]

    def scan(body: bytes) -> Any:
        try:
            return jsonbytes.member_spans(body), jsonbytes.element_spans(body, "/messages")
        except InputError:
            return "refused"

    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(jsonbytes, "_PROBE", probe)
        mp.setattr(jsonbytes, "_WIDE_ELEMENT", 1)
        with jsonbytes.scan_memo():
            scan(parent)
            reused = scan(child)
    assert reused == scan(child)  # as a scan of the child alone


def test_the_childs_shared_messages_are_not_scanned_again(monkeypatch: pytest.MonkeyPatch) -> None:
    parent, child = _pair(30)
    scanned: list[tuple[bytes, int]] = []
    real = jsonbytes._skip_container

    def counting(body: bytes, pos: int) -> int:
        scanned.append((body, pos))
        return real(body, pos)

    monkeypatch.setattr(jsonbytes, "_skip_container", counting)
    with jsonbytes.scan_memo():
        jsonbytes.element_spans(parent, "/messages")
        spans = jsonbytes.element_spans(child, "/messages")
    monkeypatch.undo()
    assert spans == jsonbytes.element_spans(child, "/messages")
    in_child = [pos for body, pos in scanned if body is child]
    assert 1 <= len(in_child) <= 4  # only the messages from the edit on (the last three and the edited one)


@pytest.mark.parametrize("body", [b'{"messages":[{"a":1},{"b":2}', b'{"messages":[{"a":1} {"b":2}]}',
                                  b'{"messages":[{"a":1},{"b":2]}'])
def test_one_pass_scan_still_refuses_malformed_arrays(body: bytes, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(jsonbytes, "_PROBE", 1)
    monkeypatch.setattr(jsonbytes, "_WIDE_ELEMENT", 1)
    with jsonbytes.scan_memo(), pytest.raises(InputError):
        jsonbytes.member_spans(body)
        jsonbytes.element_spans(body, "/messages")


# ---------------------------------------------------------------- shared-prefix token reuse

@pytest.fixture(scope="module")
def small_chunks() -> tokens.Tokenizer:
    """o200k_base cutting long text into chunks of 64+ characters (so that
    generated texts span many chunks), with a memo of its own."""
    tok = tokens.get("o200k_base").__class__.__new__(tokens.TiktokenTokenizer)
    tok.__dict__.update(tokens.get("o200k_base").__dict__)  # the loaded encoding, shared
    tokens.Tokenizer.__init__(tok, "o200k_base", source="test", chunk_chars=64)
    return tok


words = st.lists(st.sampled_from(["a", "b", " ", "c", "é", "1", "\n", ".", "'", "Def", "(x)", "  ", "\u4e8b"]),
                 max_size=30).map("".join)
lines = st.lists(words.map(lambda s: "L" + s + "\n"), min_size=1, max_size=30).map("".join)


@given(parent=lines, cut=st.floats(0, 1), tail=st.text(max_size=40))
@example(parent="Line of text, def f(x): return x\n" * 40, cut=0.9, tail="changed")  # reuse surely happens
def test_shared_prefix_reuse_gives_the_ids_of_a_whole_encoding(small_chunks: tokens.Tokenizer, parent: str,
                                                               cut: float, tail: str) -> None:
    tok = small_chunks
    tok.cache_clear()
    child = parent[: int(len(parent) * cut)] + tail
    assert tok.ids(parent).tolist() == tok._encode_chunk(parent)
    before = tok._chunk_memo.cache_info().hits
    assert tok.ids(child).tolist() == tok._encode_chunk(child)  # reused chunks + the new tail
    p_chunks, c_chunks = tokens.safe_chunks(parent, 64), tokens.safe_chunks(child, 64)
    shared = sum(1 for a, b in zip(p_chunks, c_chunks) if a == b)  # leading chunks both cut alike
    if len(c_chunks) > 1 and p_chunks[0] == c_chunks[0]:
        assert shared >= 1 and tok._chunk_memo.cache_info().hits - before >= shared


def test_child_segments_reuse_the_parents_ids() -> None:
    parent, child = _pair(12)
    d = wire.get("openai-chat")
    tok = tokens.get("o200k_base")
    from fidelity.tokens.billed import segment_ids

    tok.cache_clear()
    p_segs, c_segs = d.cache_view(parent), d.cache_view(child)
    p_ids = segment_ids(tok, p_segs, dialect=d.name, provider=d.provider, model="gpt-4o")
    hits = tok._chunk_memo.cache_info().hits
    c_ids = segment_ids(tok, c_segs, dialect=d.name, provider=d.provider, model="gpt-4o")
    assert tok._chunk_memo.cache_info().hits > hits  # the shared history came from the memo
    tok.cache_clear()
    fresh = segment_ids(tok, c_segs, dialect=d.name, provider=d.provider, model="gpt-4o")
    assert [a.tolist() for a in c_ids] == [a.tolist() for a in fresh]
    shared = next(i for i, (a, b) in enumerate(zip(p_segs, c_segs)) if a.data != b.data)
    assert [a.tolist() for a in p_ids[:shared]] == [a.tolist() for a in c_ids[:shared]]
