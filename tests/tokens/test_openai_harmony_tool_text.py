"""OpenAI's own Harmony models (gpt-5.x, o-series) read a function's
``parameters`` description as a comment before the object's ``{``
(OpenAI's Harmony renderer, openai/harmony src/encoding.rs,
``json_schema_to_typescript``); other models, and gpt-oss served through its
chat template, do not.

Modelled on pydantic/pydantic-ai
tests/cassettes/test_tool_search/test_cross_provider_capability_replay[openai-responses-gpt-5.4-anthropic-claude-sonnet-4-5].yaml
(interaction 0: gpt-5.4, instructions, one question, one ``load_capability``
tool whose parameters carry ``"description": "Typed arguments for a
`load_capability` tool call."``): billed 109, counted 95 without the
comment, 108 with it; the same construct on gpt-5.2 and gpt-5.6 recordings
of that suite was 13-14 under as well."""

from __future__ import annotations

from typing import Any

import orjson
import pytest

from fidelity import tokens
from fidelity.tokens.framing_openai_tools import render_function
from fidelity.tokens_check import count_prompt

_ABOUT = "Arguments of one call to the loader."
_FN = {"name": "load_skill", "description": "Load a skill by its id.",
       "parameters": {"type": "object", "description": _ABOUT, "additionalProperties": False,
                      "properties": {"id": {"type": "string", "description": "The skill's id."}},
                      "required": ["id"]}, "strict": True}


def _body(model: str, fn: dict[str, Any], chat: bool) -> tuple[bytes, str]:
    if chat:
        body = {"model": model, "messages": [{"role": "system", "content": "Skills load on demand."},
                                             {"role": "user", "content": "Can I get a refund?"}],
                "tools": [{"type": "function", "function": fn}]}
        return orjson.dumps(body), "https://api.openai.com/v1/chat/completions"
    body = {"model": model, "instructions": "Skills load on demand.",
            "input": [{"role": "user", "content": "Can I get a refund?"}], "tools": [{"type": "function", **fn}]}
    return orjson.dumps(body), "https://api.openai.com/v1/responses"


def _added(model: str, chat: bool) -> int:
    plain = {**_FN, "parameters": {k: v for k, v in _FN["parameters"].items() if k != "description"}}
    with_note, url = _body(model, _FN, chat)
    without, _ = _body(model, plain, chat)
    return count_prompt(with_note, url=url).tokens - count_prompt(without, url=url).tokens


@pytest.mark.parametrize("model", ["gpt-5.4", "gpt-5.2", "gpt-5-mini", "o3"])
@pytest.mark.parametrize("chat", [False, True])
def test_a_harmony_model_bills_the_parameters_description(model: str, chat: bool) -> None:
    note = len(tokens.get("o200k_base").ids(f"// {_ABOUT}\n"))
    assert note > 5
    assert _added(model, chat) == note


@pytest.mark.parametrize("model", ["gpt-4o", "gpt-4.1-mini"])
def test_other_models_do_not(model: str) -> None:
    assert _added(model, chat=False) == 0
    assert _added(model, chat=True) == 0


def test_the_comment_stands_before_the_object() -> None:
    assert render_function(_FN, harmony=True) == (
        "// Load a skill by its id.\n"
        "type load_skill = (_: // Arguments of one call to the loader.\n{\n"
        "// The skill's id.\nid: string,\n}) => any;\n\n")
    assert render_function(_FN) == (
        "// Load a skill by its id.\ntype load_skill = (_: {\n// The skill's id.\nid: string,\n}) => any;\n\n")
    # parameters without properties read as no parameters, described or not
    empty = {"name": "now", "parameters": {"type": "object", "description": _ABOUT, "properties": {}}}
    assert render_function(empty, harmony=True) == render_function(empty) == "type now = () => any;\n\n"


def test_gpt_oss_served_by_others_reads_its_chat_template() -> None:
    body = {"model": "openai/gpt-oss-120b", "messages": [{"role": "user", "content": "hi"}],
            "tools": [{"type": "function", "function": _FN}]}
    plain = {**_FN, "parameters": {k: v for k, v in _FN["parameters"].items() if k != "description"}}
    other = {**body, "tools": [{"type": "function", "function": plain}]}
    url = "https://api.groq.com/openai/v1/chat/completions"
    assert count_prompt(orjson.dumps(body), url=url).tokens == count_prompt(orjson.dumps(other), url=url).tokens
