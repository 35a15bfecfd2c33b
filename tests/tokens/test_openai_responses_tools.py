"""Function tools of a model that does not read Harmony (gpt-4o, gpt-4.1) on the
Responses API: the tools section bills without the ``# Tools`` heading, and a
``function_call_output`` item is a message from ``functions.NAME``, so a longer
function name costs its tokens once more per result.

Modelled on pydantic/pydantic-ai recordings (both interactions of each):

* tests/models/cassettes/test_openai_responses/test_text_output_function.yaml (gpt-4o:
  billed 36, then 59 with the call and its result);
* tests/models/cassettes/test_openai_responses/test_openai_responses_non_reasoning_model_no_item_ids.yaml
  (gpt-4.1, a 6-token function name: billed 36, then 61).
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


def test_harmony_models_and_chat_keep_their_rendering() -> None:
    """The Responses head is for models that do not read Harmony; Chat tools keep ``# Tools``."""
    assert framing_openai.RESPONSES_TOOLS_HEAD == framing_openai.TOOLS_HEAD.removeprefix("# Tools\n\n")
    chat = orjson.dumps({"messages": [{"role": "user", "content": "hi"}], "model": "gpt-4o",
                         "tools": [{"type": "function", "function": {"name": "f", "parameters": {
                             "type": "object", "properties": {}}}}]})
    resp = orjson.dumps({"input": [{"role": "user", "content": "hi"}], "model": "gpt-4o",
                         "tools": [{"type": "function", "name": "f", "parameters": {"type": "object", "properties": {}}}]})
    chat_n = count_prompt(chat, url="https://api.openai.com/v1/chat/completions").tokens
    assert chat_n - count_prompt(resp, url=URL).tokens == 3  # "# Tools\n\n"
    from fidelity.wire import Segment

    seg = Segment("tools", 0, "/tools/0", orjson.dumps(orjson.loads(resp)["tools"][0]))
    for model, head in (("gpt-5", framing_openai.TOOLS_HEAD), ("gpt-4o", framing_openai.RESPONSES_TOOLS_HEAD)):
        assert framing_openai.one_segment_pieces(seg, None, model, {}, True, True)[0] == head
