"""Function tools of a model that does not read Harmony (gpt-4o, gpt-4.1): the
tools section bills without the ``# Tools`` heading; on the Responses API a
``function_call_output`` item is a message from ``functions.NAME`` (a longer
function name costs its tokens once more per result); on Chat Completions the
tools live in the system message, opening one of their own where the request
has none, and bill 2 tokens more.

Modelled on pydantic/pydantic-ai recordings:

* tests/models/cassettes/test_openai_responses/test_text_output_function.yaml (gpt-4o:
  billed 36, then 59 with the call and its result);
* tests/models/cassettes/test_openai_responses/test_openai_responses_non_reasoning_model_no_item_ids.yaml
  (gpt-4.1, a 6-token function name: billed 36, then 61);
* tests/models/cassettes/test_openai/test_openai_text_output_function.yaml (the same tool on
  Chat, no system message: billed 42) and test_openai_prompted_output.yaml (Chat with a
  system message: billed 109).
"""

from __future__ import annotations

from typing import Any

import orjson
import pytest
from hypothesis import given
from hypothesis import strategies as st

from fidelity.tokens import framing_openai
from fidelity.tokens_check import count_prompt

URL = "https://api.openai.com/v1/responses"


def _tool(name: str, description: str | None) -> dict[str, Any]:
    return {"description": description, "name": name, "parameters": {"additionalProperties": False,
                                                                      "properties": {}, "type": "object"},
            "strict": False, "type": "function"}


def _body(model: str, question: str, name: str, description: str | None, turn: list[dict[str, Any]]) -> bytes:
    return orjson.dumps({"input": [{"content": question, "role": "user"}, *turn], "model": model, "stream": False,
                         "tool_choice": "auto", "tools": [_tool(name, description)]})


def _round_trip(name: str, output: str, assistant: bool = False) -> list[dict[str, Any]]:
    call = [{"arguments": "{}", "call_id": "call_1", "name": name, "type": "function_call"},
            {"call_id": "call_1", "output": output, "type": "function_call_output"}]
    return ([{"content": "", "role": "assistant"}] if assistant else []) + call


@pytest.mark.parametrize("model, question, name, description, output, assistant, first, second", [
    ("gpt-4o", "What is the largest city in the user country?", "get_user_country", "", "Mexico", True, 36, 59),
    ("gpt-4.1", "What is the meaning of life?", "get_meaning_of_life", None, "42", False, 36, 61),
])
def test_responses_tools_and_results_bill_as_recorded(model: str, question: str, name: str, description: str | None,
                                                      output: str, assistant: bool, first: int, second: int) -> None:
    assert count_prompt(_body(model, question, name, description, []), url=URL).tokens == first
    got = count_prompt(_body(model, question, name, description, _round_trip(name, output, assistant)), url=URL)
    assert got.tokens == second and got.kind == "tools"


_NAMES = st.from_regex(r"[a-z][a-z_]{0,30}", fullmatch=True)


@given(_NAMES, _NAMES)
def test_a_result_costs_its_function_name_once_more(a: str, b: str) -> None:
    """Two requests that differ only in the function's name differ, per result, by
    the name's tokens in the tool definition, the call and the result."""
    def tokens(name: str) -> int:
        return count_prompt(_body("gpt-4o", "hi", name, "", _round_trip(name, "ok")), url=URL).tokens

    def no_result(name: str) -> int:
        return count_prompt(_body("gpt-4o", "hi", name, "", _round_trip(name, "ok")[:1]), url=URL).tokens

    def result_cost(name: str) -> int:
        return tokens(name) - no_result(name)

    from fidelity import tokens as toks

    enc = toks.get("o200k_base").encode
    assert result_cost(a) - result_cost(b) == len(enc("functions." + a)) - len(enc("functions." + b))


CHAT = "https://api.openai.com/v1/chat/completions"
_COUNTRY = {"function": {"description": "", "name": "get_user_country", "parameters": {
    "additionalProperties": False, "properties": {}, "type": "object"}}, "type": "function"}
_SCHEMA_PROMPT = ("Always respond with a JSON object that's compatible with this schema:\n\n{\"properties\": "
                  "{\"city\": {\"type\": \"string\"}, \"country\": {\"type\": \"string\"}}, \"required\": "
                  "[\"city\", \"country\"], \"title\": \"CityLocation\", \"type\": \"object\"}\n\nDon't "
                  "include any text or Markdown fencing before or after.")


@pytest.mark.parametrize("system, extra, billed", [
    (None, {}, 42),
    (_SCHEMA_PROMPT, {"response_format": {"type": "json_object"}}, 109),
])
def test_chat_tools_live_in_the_system_message(system: str | None, extra: dict[str, Any], billed: int) -> None:
    messages = ([{"content": system, "role": "system"}] if system else []) + [
        {"content": "What is the largest city in the user country?", "role": "user"}]
    body = {"messages": messages, "model": "gpt-4o", **extra, "stream": False, "tool_choice": "auto",
            "tools": [_COUNTRY]}
    assert count_prompt(orjson.dumps(body), url=CHAT).tokens == billed


def test_a_chat_system_message_takes_in_the_tools() -> None:
    """The same tools cost the system message's framing (4 tokens) less where the
    request has one; without tools a system message costs what it did."""
    user = {"role": "user", "content": "hi"}
    system = {"role": "system", "content": "Be brief."}

    def n(messages: list[dict[str, Any]], tools: bool) -> int:
        body = {"messages": messages, "model": "gpt-4o", **({"tools": [_COUNTRY]} if tools else {})}
        return count_prompt(orjson.dumps(body), url=CHAT).tokens

    tools_alone = n([user], True) - n([user], False)
    tools_with_system = n([system, user], True) - n([system, user], False)
    assert tools_alone - tools_with_system == 4
    assert framing_openai.opens_system(True, "gpt-4o", [user])
    assert not framing_openai.opens_system(True, "gpt-4o", [{"role": "developer", "content": "x"}, user])
    assert not framing_openai.opens_system(True, "gpt-5", [user]) and not framing_openai.opens_system(
        False, "gpt-4o", [user])


def test_harmony_models_keep_their_rendering() -> None:
    """The heading-less head is for models that do not read Harmony."""
    assert framing_openai.RESPONSES_TOOLS_HEAD == framing_openai.TOOLS_HEAD.removeprefix("# Tools\n\n")
    resp = orjson.dumps({"input": [{"role": "user", "content": "hi"}], "model": "gpt-4o",
                         "tools": [{"type": "function", "name": "f", "parameters": {"type": "object", "properties": {}}}]})
    from fidelity.wire import Segment

    seg = Segment("tools", 0, "/tools/0", orjson.dumps(orjson.loads(resp)["tools"][0]))
    for model, head in (("gpt-5", framing_openai.TOOLS_HEAD), ("gpt-4o", framing_openai.RESPONSES_TOOLS_HEAD)):
        assert framing_openai.one_segment_pieces(seg, None, model, {}, True, True)[0] == head


def _strict(name: str, prop: str) -> dict[str, Any]:
    return {"additionalProperties": False, "properties": {prop: {"type": "string"}}, "required": [prop],
            "type": "object"}


def test_properties_are_read_without_a_space_after_the_colon() -> None:
    """A property of a model without Harmony is ``name:type`` (one token fewer
    than ``name: type`` in each of these): pydantic-ai
    tests/cassettes/test_dbos/test_dbos_agent_with_hitl_tool.yaml (Chat, a system
    message, two strict one-property tools: billed 71) and
    tests/models/cassettes/test_openai_responses/test_openai_responses_model_simple_response_with_tool_call.yaml
    (Responses: billed 40)."""
    hitl = {"messages": [{"content": "Just call tools without asking for confirmation.", "role": "system"},
                         {"content": "Delete the file `.env` and create `test.txt`", "role": "user"}],
            "model": "gpt-4o", "stream": False, "tool_choice": "auto",
            "tools": [{"function": {"description": "", "name": n, "parameters": _strict(n, "path"), "strict": True},
                       "type": "function"} for n in ("create_file", "delete_file")]}
    assert count_prompt(orjson.dumps(hitl), url=CHAT).tokens == 71
    capital = {"input": [{"content": "What is the capital of PotatoLand?", "role": "user"}], "model": "gpt-4o",
               "stream": False, "tool_choice": "auto",
               "tools": [{"description": None, "name": "get_capital", "parameters": _strict("get_capital", "country"),
                          "strict": True, "type": "function"}]}
    assert count_prompt(orjson.dumps(capital), url=URL).tokens == 40
    from fidelity.tokens.framing_openai_tools import render_function

    fn = {"name": "f", "parameters": {"type": "object", "properties": {"a": {"type": "object", "properties": {
        "b": {"type": "integer"}}}}}}
    assert render_function(fn, spaced=False) == "type f = (_: {\na?:{\nb?:number,\n},\n}) => any;\n\n"
    assert render_function(fn) == "type f = (_: {\na?: {\nb?: number,\n},\n}) => any;\n\n"  # Harmony models


def test_parallel_chat_calls_are_one_multi_tool_use_call() -> None:
    """Two calls in one assistant message (pydantic-ai
    tests/cassettes/test_dbos/test_dbos_agent_with_hitl_tool.yaml, interaction 1: billed
    133) are billed as one ``multi_tool_use.parallel`` call listing both: 2 under the
    recording, where two separate calls were 17 under."""
    hitl = {"messages": [
        {"content": "Just call tools without asking for confirmation.", "role": "system"},
        {"content": "Delete the file `.env` and create `test.txt`", "role": "user"},
        {"content": None, "role": "assistant", "tool_calls": [
            {"function": {"arguments": "{\"path\": \".env\"}", "name": "delete_file"}, "id": "call_1", "type": "function"},
            {"function": {"arguments": "{\"path\": \"test.txt\"}", "name": "create_file"}, "id": "call_2",
             "type": "function"}]},
        {"content": "true", "role": "tool", "tool_call_id": "call_1"},
        {"content": "Success", "role": "tool", "tool_call_id": "call_2"}],
        "model": "gpt-4o", "stream": False, "tool_choice": "auto",
        "tools": [{"function": {"description": "", "name": n, "parameters": _strict(n, "path"), "strict": True},
                   "type": "function"} for n in ("create_file", "delete_file")]}
    got = count_prompt(orjson.dumps(hitl), url=CHAT).tokens
    assert 0 <= 133 - got <= 2
    pieces = framing_openai.message_pieces(hitl["messages"][2], "gpt-4o")
    assert "assistant to=multi_tool_use.parallel" in pieces
    assert pieces[-2] == ('{"tool_uses":[{"recipient_name":"functions.delete_file","parameters":{"path":".env"}},'
                          '{"recipient_name":"functions.create_file","parameters":{"path":"test.txt"}}]}')
    # a Harmony model calls each function on its own
    assert "assistant to=multi_tool_use.parallel" not in framing_openai.message_pieces(hitl["messages"][2], "gpt-5")
