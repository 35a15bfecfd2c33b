"""Anthropic Messages messages lists: mapping, errors, round trip."""

from __future__ import annotations

import copy
import json
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from fidelity.errors import InputError
from fidelity.model import Image, Message, Reasoning, Text, ToolCall, ToolResult
from fidelity.sources.anthropic_messages import (
    from_anthropic_messages,
    read_anthropic_messages,
    to_anthropic_messages,
)

DATA = Path(__file__).parents[1] / "data" / "sources"


def test_reads_blocks() -> None:
    msgs = read_anthropic_messages(DATA / "anthropic_valid.json")
    assert msgs[1].parts == (Reasoning("Use ls.", signature="sig=="),
                             ToolCall(id="toolu_1", name="bash", arguments={"command": "ls"}))
    assert msgs[2].parts == (ToolResult(call_id="toolu_1", content="a.txt"),)
    raw = json.loads((DATA / "anthropic_valid.json").read_text())
    assert to_anthropic_messages(msgs) == raw


def test_errors_point_at_the_value() -> None:
    with pytest.raises(InputError) as info:
        read_anthropic_messages(DATA / "anthropic_bad_block.json")
    assert info.value.pointer == "/0/content/0" and info.value.path.endswith("anthropic_bad_block.json")
    with pytest.raises(InputError, match="role must be"):
        from_anthropic_messages([{"role": "system", "content": "x"}])
    with pytest.raises(InputError, match="only text and image"):
        from_anthropic_messages([{"role": "user", "content": [
            {"type": "tool_result", "tool_use_id": "t", "content": [{"type": "tool_use", "id": "x"}]}]}])


def test_base64_image_and_tool_message() -> None:
    raw = [{"role": "user", "content": [{"type": "image", "source": {
        "type": "base64", "media_type": "image/png", "data": "iVBOR"}}]}]
    msgs = from_anthropic_messages(raw)
    assert msgs[0].parts == (Image(url="data:image/png;base64,iVBOR", media_type="image/png"),)
    assert to_anthropic_messages(msgs) == raw
    tool = to_anthropic_messages([Message("tool", (ToolResult(call_id="t", content="ok", is_error=True),))])
    assert tool == [{"role": "user", "content": [
        {"type": "tool_result", "tool_use_id": "t", "content": "ok", "is_error": True}]}]


_text = st.text(st.characters(blacklist_categories=("Cs",)), max_size=20)
_id = st.text("abcdef0123456789_", min_size=1, max_size=8)
_input = st.dictionaries(_text, st.integers() | _text | st.lists(st.integers(), max_size=2), max_size=3)
_cc = st.none() | st.just({"type": "ephemeral"})
_text_block = st.tuples(_text, _cc).map(
    lambda p: {"type": "text", "text": p[0]} | ({"cache_control": p[1]} if p[1] else {}))
_image_block = st.one_of(
    _text.map(lambda t: {"type": "image", "source": {"type": "url", "url": "https://x/" + t}}),
    st.text("abcXYZ012+/=", max_size=8).map(
        lambda d: {"type": "image", "source": {"type": "base64", "media_type": "image/jpeg", "data": d}}),
)
_result = st.tuples(_id, _text | st.lists(_text_block | _image_block, max_size=2), st.booleans()).map(
    lambda p: {"type": "tool_result", "tool_use_id": p[0], "content": p[1]} | ({"is_error": True} if p[2] else {}))
_user_blocks = st.lists(_text_block | _image_block | _result, max_size=3)
_asst_blocks = st.lists(st.one_of(
    _text_block,
    st.tuples(_text, _text).map(lambda p: {"type": "thinking", "thinking": p[0], "signature": p[1]}),
    st.tuples(_id, _text, _input).map(lambda p: {"type": "tool_use", "id": p[0], "name": p[1], "input": p[2]}),
), max_size=3)


def _normal(blocks: list) -> bool:
    return not (len(blocks) == 1 and blocks[0]["type"] == "text" and "cache_control" not in blocks[0])


messages = st.lists(st.one_of(
    st.tuples(st.sampled_from(["user", "assistant"]), _text).map(lambda p: {"role": p[0], "content": p[1]}),
    _user_blocks.filter(_normal).map(lambda b: {"role": "user", "content": b}),
    _asst_blocks.filter(_normal).map(lambda b: {"role": "assistant", "content": b}),
), max_size=5)


@given(messages)
def test_round_trip_of_normal_form(raw: list) -> None:
    before = copy.deepcopy(raw)
    msgs = from_anthropic_messages(raw)
    assert raw == before
    back = to_anthropic_messages(msgs)
    assert json.dumps(back, ensure_ascii=False) == json.dumps(raw, ensure_ascii=False)
    assert from_anthropic_messages({"messages": back}) == msgs


def test_cache_control_keeps_a_single_text_block_a_list() -> None:
    raw = [{"role": "user", "content": [{"type": "text", "text": "x", "cache_control": {"type": "ephemeral"}}]}]
    msgs = from_anthropic_messages(raw)
    assert msgs[0].parts == (Text("x", cache_control={"type": "ephemeral"}),)
    assert to_anthropic_messages(msgs) == raw
