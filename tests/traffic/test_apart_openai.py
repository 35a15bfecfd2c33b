"""OpenAI requests whose billed prompt OpenAI writes itself are set apart
(fidelity.server_side.reason, fidelity.traffic.apart.exchange), each kind
modelled on a pydantic/pydantic-ai recording whose billed input the body
cannot explain:

* tests/cassettes/test_tool_search/test_openai_hosted_tool_search_stateless_continuation.yaml
  (gpt-5.4, a hosted ``tool_search`` tool and one deferred function: billed
  570, the body's rendering 65);
* tests/models/cassettes/test_openai_tool_availability_delta/test_supported_model_calls_additional_tool.yaml
  (gpt-5.6, an ``additional_tools`` input item: billed 160, counted 34);
* tests/models/cassettes/test_openai_responses/test_openai_responses_reasoning_mode_pro.yaml
  (gpt-5.6-sol, ``reasoning.mode: "pro"``, a one-line question: billed 1,549, counted 18);
* tests/models/cassettes/test_openai_responses/test_openai_responses_compact_with_instructions.yaml
  (gpt-4o-mini, ``POST /v1/responses/compact``: billed 124, counted 31)."""

from __future__ import annotations

from typing import Any

import orjson
import pytest

from fidelity import server_side
from fidelity.traffic.apart import exchange

_RESPONSES = "https://api.openai.com/v1/responses"
_FN = {"type": "function", "name": "get_exchange_rate", "description": "Look up an exchange rate.",
       "parameters": {"type": "object", "properties": {"pair": {"type": "string"}}, "required": ["pair"]},
       "strict": True}
_USER = {"role": "user", "content": "Load get_exchange_rate, then reply 'loaded'."}


@pytest.mark.parametrize("body, url, expected", [
    # hosted tool search, and the client-run form (execution: client): deferred definitions load as found
    ({"model": "gpt-5.4", "input": [_USER], "tools": [{"type": "tool_search"}, {**_FN, "defer_loading": True}]},
     _RESPONSES, "server tools"),
    ({"model": "gpt-5.4", "input": [_USER], "tools": [{"type": "tool_search", "execution": "client",
                                                        "parameters": {"type": "object"}}, _FN]},
     _RESPONSES, "server tools"),
    # a later request replaying the search's items
    ({"model": "gpt-5.4", "input": [_USER, {"type": "tool_search_call", "id": "ts_1", "arguments": {}},
                                    {"type": "tool_search_output", "id": "tso_1", "tools": [_FN]}],
      "tools": [_FN]}, _RESPONSES, "server tools"),
    ({"model": "gpt-5.6", "input": [_USER, {"type": "additional_tools", "role": "developer", "tools": [_FN]}]},
     _RESPONSES, "server template"),
    ({"model": "gpt-5.6-sol", "input": [_USER], "reasoning": {"context": "all_turns", "mode": "pro"}},
     _RESPONSES, "server template"),
    ({"model": "gpt-4o-mini", "input": [_USER], "instructions": "Summarize very briefly"},
     "https://api.openai.com/v1/responses/compact", "server template"),
    # scored: a standard reasoning mode, plain function tools, the plain endpoint
    ({"model": "gpt-5.6-sol", "input": [_USER], "reasoning": {"mode": "standard"}}, _RESPONSES, None),
    ({"model": "gpt-5.4", "input": [_USER], "tools": [_FN]}, _RESPONSES, None),
    ({"model": "gpt-4o-mini", "input": [_USER], "instructions": "Summarize very briefly"}, _RESPONSES, None),
])
def test_openai_requests_whose_prompt_openai_writes_are_set_apart(body: dict[str, Any], url: str,
                                                                 expected: str | None) -> None:
    raw = orjson.dumps(body)
    ex = exchange("x.yaml", 0, raw, url=url, usage={"input_tokens": 100, "output_tokens": 1})
    assert ex.skip is None
    assert ex.apart == expected
    assert expected is None or expected in server_side.REASONS


def test_the_reason_does_not_read_a_mode_or_item_type_in_text() -> None:
    """A user message that merely says ``"pro"`` or ``additional_tools`` is scored."""
    body = {"model": "gpt-5.6", "input": [{"role": "user", "content": "mode pro, type additional_tools"}],
            "reasoning": {"mode": "standard", "effort": "pro"}}
    assert server_side.reason(body, orjson.dumps(body)) is None
