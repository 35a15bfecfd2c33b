"""OpenAI Chat Completions messages lists: mapping, errors, round trip."""

from __future__ import annotations

import copy
import json
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from fidelity.errors import InputError
from fidelity.model import Image, Message, Reasoning, Text, ToolCall, ToolResult
from fidelity.sources.openai_messages import from_openai_messages, read_openai_messages, to_openai_messages

DATA = Path(__file__).parents[1] / "data" / "sources"


def test_reads_a_messages_object() -> None:
    msgs = read_openai_messages(DATA / "openai_valid.json")
    assert [m.role for m in msgs] == ["system", "user", "assistant", "tool", "assistant"]
    a = msgs[2]
    assert a.parts[0] == Reasoning("Use ls.")
    call = a.parts[1]
    assert isinstance(call, ToolCall) and call.arguments_json == '{"command": "ls"}' and call.arguments == {
        "command": "ls"}
    assert msgs[3].parts == (ToolResult(call_id="call_1", content="a.txt"),)
    raw = json.loads((DATA / "openai_valid.json").read_text())["messages"]
    assert json.dumps(to_openai_messages(msgs)) == json.dumps(raw)


def test_errors_point_at_the_value() -> None:
    with pytest.raises(InputError) as info:
        read_openai_messages(DATA / "openai_bad_call.json")
    assert info.value.pointer == "/1/tool_calls/0" and info.value.path.endswith("openai_bad_call.json")
    with pytest.raises(InputError, match="unknown role"):
        from_openai_messages([{"role": "robot", "content": "x"}])
    with pytest.raises(InputError, match="tool_call_id"):
        from_openai_messages({"messages": [{"role": "tool", "content": "x"}]})
    with pytest.raises(InputError, match="unsupported content part"):
        from_openai_messages([{"role": "user", "content": [{"type": "audio"}]}])


def test_extra_keys_survive() -> None:
    raw = [{"role": "user", "content": "hi", "name": "ann"}]
    msgs = from_openai_messages(raw)
    assert msgs[0].extra == {"name": "ann"}
    assert to_openai_messages(msgs) == raw


_text = st.text(st.characters(blacklist_categories=("Cs",)), max_size=20)
_id = st.text("abcdef0123456789_", min_size=1, max_size=8)
_args = st.one_of(
    st.dictionaries(_text, st.integers() | _text, max_size=3).map(lambda d: json.dumps(d, ensure_ascii=False)),
    st.just('{"b": 1,  "a": 2}'),  # odd spacing and key order kept verbatim
    st.just("{not json"),  # models do emit invalid JSON; the string survives
)
_part = st.one_of(
    _text.map(lambda t: {"type": "text", "text": t}),
    st.tuples(_text, st.none() | st.sampled_from(["low", "high", "auto"])).map(
        lambda p: {"type": "image_url", "image_url": {"url": "https://x/" + p[0]} | (
            {"detail": p[1]} if p[1] else {})}),
)
_content = st.one_of(_text, st.lists(_part, max_size=3).filter(
    lambda ps: not (len(ps) == 1 and ps[0]["type"] == "text")))


@st.composite
def _assistant(draw: st.DrawFn) -> dict:
    row: dict = {"role": "assistant", "content": draw(st.none() | _content.filter(lambda c: c != []))}  # [] is written as null
    if draw(st.booleans()):
        row["reasoning_content"] = draw(_text)
    calls = draw(st.lists(st.tuples(_id, _text, _args), max_size=2))
    if calls:
        row["tool_calls"] = [{"id": i, "type": "function", "function": {"name": n, "arguments": a}}
                             for i, n, a in calls]
    return row


messages = st.lists(st.one_of(
    st.tuples(st.sampled_from(["system", "developer", "user"]), _content).map(
        lambda p: {"role": p[0], "content": p[1]}),
    _assistant(),
    st.tuples(_id, _text).map(lambda p: {"role": "tool", "tool_call_id": p[0], "content": p[1]}),
), max_size=6)


@given(messages)
def test_round_trip_of_normal_form(raw: list) -> None:
    before = copy.deepcopy(raw)
    msgs = from_openai_messages(raw)
    assert raw == before
    back = to_openai_messages(msgs)
    assert json.dumps(back, ensure_ascii=False) == json.dumps(raw, ensure_ascii=False)
    assert from_openai_messages(back) == msgs
    for m in msgs:
        for p in m.parts:
            assert not isinstance(p, ToolCall) or p.arguments_json is not None


def test_single_text_list_normalises_to_a_string() -> None:
    msgs = from_openai_messages([{"role": "user", "content": [{"type": "text", "text": "x"}]}])
    assert msgs == (Message("user", (Text("x"),)),)
    assert to_openai_messages(msgs) == [{"role": "user", "content": "x"}]
    img = from_openai_messages([{"role": "user", "content": [{"type": "image_url", "image_url": {"url": "u"}}]}])
    assert img[0].parts == (Image(url="u"),)
