"""Gemini Content[] histories (Qwen Code): mapping, errors, exact round trip."""

from __future__ import annotations

import copy
import json
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from fidelity.errors import InputError
from fidelity.model import Message, Reasoning, Text, ToolCall, ToolResult
from fidelity.sources.gemini_history import from_gemini_contents, read_gemini_history, to_gemini_contents

DATA = Path(__file__).parents[1] / "data" / "sources"


def test_reads_the_qwen_code_shapes() -> None:
    msgs = read_gemini_history(DATA / "gemini_valid.json")
    assert [m.role for m in msgs] == ["user", "assistant", "user", "assistant"]
    assert msgs[1].parts[0] == Reasoning("Need the file.")
    call = msgs[1].parts[1]
    assert call == ToolCall(id="c1", name="read_file", arguments={"path": "a.txt", "limit": 10})
    assert list(call.arguments) == ["path", "limit"]
    assert msgs[2].parts == (ToolResult(call_id="c1", name="read_file", content={"output": "hello"}),)
    assert msgs[3] == Message("assistant", (Text("It says hello."),))


def test_file_round_trips_exactly() -> None:
    raw = json.loads((DATA / "gemini_valid.json").read_text())
    assert to_gemini_contents(read_gemini_history(DATA / "gemini_valid.json")) == raw
    assert json.dumps(to_gemini_contents(from_gemini_contents(raw))) == json.dumps(raw)


def test_errors_point_at_the_value() -> None:
    with pytest.raises(InputError) as info:
        read_gemini_history(DATA / "gemini_bad_role.json")
    assert info.value.pointer == "/1/role" and info.value.path.endswith("gemini_bad_role.json")
    with pytest.raises(InputError, match="unsupported part keys"):
        from_gemini_contents([{"role": "user", "parts": [{"inlineData": {}}]}])
    with pytest.raises(InputError) as info:
        from_gemini_contents({"history": [{"role": "model", "parts": [{"functionCall": {"args": {}}}]}]})
    assert info.value.pointer == "/history/0/parts/0/functionCall"
    with pytest.raises(InputError, match="expected a JSON list"):
        from_gemini_contents({"role": "user"})
    with pytest.raises(InputError, match="no 'system' role"):
        to_gemini_contents([Message("system", (Text("x"),))])


def test_openai_style_tool_message_becomes_a_user_function_response() -> None:
    out = to_gemini_contents([Message("tool", (ToolResult(call_id="c", name="f", content="done"),))])
    assert out == [{"role": "user", "parts": [{"functionResponse": {"id": "c", "name": "f",
                                                                   "response": {"output": "done"}}}]}]


_text = st.text(st.characters(blacklist_categories=("Cs",)), max_size=20)
_json = st.recursive(
    st.none() | st.booleans() | st.integers() | _text,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(_text, inner, max_size=3),
    max_leaves=8,
)
_obj = st.dictionaries(_text, _json, max_size=4)
_id = st.text("abcdef0123456789_", min_size=1, max_size=8)

_model_part = st.one_of(
    _text.map(lambda t: {"text": t}),
    _text.map(lambda t: {"text": t, "thought": True}),
    st.tuples(_text, _text).map(lambda p: {"text": p[0], "thought": True, "thoughtSignature": p[1]}),
    st.tuples(_id, _text, _obj).map(lambda p: {"functionCall": {"id": p[0], "name": p[1], "args": p[2]}}),
    st.tuples(_text, _obj).map(lambda p: {"functionCall": {"name": p[0], "args": p[1]}}),
)
_user_part = st.one_of(
    _text.map(lambda t: {"text": t}),
    st.tuples(_id, _text, _obj).map(lambda p: {"functionResponse": {"id": p[0], "name": p[1], "response": p[2]}}),
)
contents = st.lists(
    st.one_of(
        st.lists(_user_part, max_size=3).map(lambda ps: {"role": "user", "parts": ps}),
        st.lists(_model_part, max_size=3).map(lambda ps: {"role": "model", "parts": ps}),
    ),
    max_size=5,
)


@given(contents)
def test_round_trip_is_exact(history: list) -> None:
    before = copy.deepcopy(history)
    messages = from_gemini_contents(history)
    assert history == before  # input not mutated
    back = to_gemini_contents(messages)
    assert json.dumps(back) == json.dumps(history)  # same values, same key order
    assert from_gemini_contents(back) == messages
    assert all(m.role in ("user", "assistant") for m in messages)


@pytest.mark.parametrize("part,problem", [
    ({"functionCall": {"args": {}}}, "/0/parts/0/functionCall: functionCall needs a string name (and optional id, args)"),
    ({"functionCall": {"name": "f", "id": 3}}, "/0/parts/0/functionCall/id: functionCall id must be a string"),
    ({"functionCall": {"name": "f", "args": []}}, "/0/parts/0/functionCall/args: functionCall args must be an object"),
    ({"functionResponse": {"name": "f", "x": 1}},
     "/0/parts/0/functionResponse: functionResponse needs a string name (and optional id, response)"),
    ({"functionResponse": {"name": "f", "response": "t"}},
     "/0/parts/0/functionResponse/response: functionResponse response must be an object"),
])
def test_a_bad_call_or_response_names_its_pointer(part: dict, problem: str) -> None:
    with pytest.raises(InputError) as err:
        from_gemini_contents([{"role": "model", "parts": [part]}], path="h.json")
    assert str(err.value) == f"h.json at {problem.split(': ', 1)[0]}: {problem.split(': ', 1)[1]}"


def test_a_call_and_a_response_without_id_read_an_empty_id() -> None:
    (call,), (result,) = (m.parts for m in from_gemini_contents([
        {"role": "model", "parts": [{"functionCall": {"name": "f"}}]},
        {"role": "user", "parts": [{"functionResponse": {"name": "f"}}]}]))
    assert call == ToolCall(id="", name="f", arguments={})
    assert result == ToolResult(call_id="", name="f", content={})
