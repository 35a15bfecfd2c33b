"""The canonical request JSON format round-trips exactly and rejects bad input by pointer."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest
from hypothesis import given

from fidelity.canonical import load_request, request_from_json, request_to_json
from fidelity.errors import InputError

sys.path.insert(0, str(Path(__file__).parents[1]))
from conftest import REPO  # noqa: E402
from wire.test_wire_anthropic import requests as anthropic_requests  # noqa: E402
from wire.test_wire_openai import request as request_strategy  # noqa: E402

EXAMPLE = REPO / "fixtures" / "request.example.json"


@given(request_strategy("deepseek"))
def test_round_trip_is_exact(req) -> None:
    data = request_to_json(req)
    back = request_from_json(data)
    assert back == req
    assert request_to_json(back) == data


@given(anthropic_requests)
def test_round_trip_keeps_block_breakpoints(req) -> None:
    """cache_control on tool_use, tool_result, image and text blocks (Anthropic's strategy)."""
    data = request_to_json(req)
    back = request_from_json(data)
    assert back == req
    assert request_to_json(back) == data


def test_block_breakpoints_are_written_last_in_each_part() -> None:
    from fidelity.canonical import request_to_obj
    from fidelity.model import Image, Message, Request, Route, ToolCall, ToolResult, freeze

    eph = freeze({"type": "ephemeral", "ttl": "1h"})
    req = Request(Route("anthropic", "m"), messages=(
        Message("assistant", (ToolCall("t1", "ls", freeze({"p": "."}), '{"p":"."}', eph),)),
        Message("user", (ToolResult("t1", "ls", (Image("u", cache_control=eph),), True, eph),)),
    ))
    parts = [m["parts"][0] for m in request_to_obj(req)["messages"]]
    assert list(parts[0]) == ["type", "id", "name", "arguments", "arguments_json", "cache_control"]
    assert list(parts[1]) == ["type", "call_id", "name", "content", "is_error", "cache_control"]
    assert list(parts[1]["content"][0]) == ["type", "url", "cache_control"]
    assert request_from_json(request_to_json(req)) == req


def test_example_fixture_loads() -> None:
    req = load_request(EXAMPLE)
    assert len(req.system) == 1 and len(req.tools) == 2
    assert req.messages[1].tool_calls()[0].arguments_json == '{"path":"src/parse.py","limit":80}'
    assert list(req.tools[0].parameters["properties"]) == ["path", "limit"]
    assert list(req.params) == ["tool_choice", "parallel_tool_calls", "max_completion_tokens"]


def test_lone_surrogate_survives_via_escapes() -> None:
    from fidelity.model import Message, Request, Route, Text

    req = Request(Route("openai", "m"), messages=(Message("user", (Text("a\ud800é"),)),))
    data = request_to_json(req)
    assert b"\\ud800" in data and data.isascii()
    assert request_from_json(data) == req


@pytest.mark.parametrize("doc, where", [
    (b'{"route":{"provider":"p"}}', "at /route: missing 'model'"),
    (b'{"route":{"provider":"p","model":"m"},"messages":[{"role":"user","parts":[{"type":"video"}]}]}', "at /messages/0/parts/0: unknown part type"),
    (b'{"route":{"provider":"p","model":"m"},"tools":[{"name":1}]}', "at /tools/0/name"),
    (b'{"route":{"provider":"p","model":"m"},"bogus":1}', "unknown key 'bogus'"),
    (b'{"fidelity":"request/9","route":{"provider":"p","model":"m"}}', "unsupported format"),
    (b'[1]', "expected an object"),
])
def test_bad_input_names_file_and_pointer(doc: bytes, where: str) -> None:
    with pytest.raises(InputError) as info:
        request_from_json(doc, path="req.json")
    assert str(info.value).startswith("req.json") and where in str(info.value)
    assert "\n" not in str(info.value)
