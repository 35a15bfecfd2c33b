"""Reasoning items of finished turns in a Responses ``input`` bill nothing
(fidelity.tokens.framing_openai.finished_reasoning): OpenAI drops them from
the context once a later user message starts a new turn, unless the request
keeps the reasoning of all turns (``reasoning.context: "all_turns"``).

Modelled on pydantic/pydantic-ai
tests/models/cassettes/test_openai_responses/test_openai_responses_model_thinking_part.yaml
(gpt-5, interaction 1: the user's question, the first turn's reasoning item
with 13,199 characters of ``encrypted_content``, its answer, a new user
message): billed 314 input tokens, counted 2,873 while the reasoning item
was counted, 312 without it."""

from __future__ import annotations

import copy
from typing import Any

import orjson
from cache.test_builder import check
from hypothesis import given
from hypothesis import strategies as st

from fidelity.tokens import framing_openai
from fidelity.tokens_check import count_prompt

_URL = "https://api.openai.com/v1/responses"
#: a stand-in for an encrypted reasoning item as long as the recording's (no recorded bytes)
_ENCRYPTED = "gAAAAAB" + "Zm9yZ2V0IHRoaXM" * 880
_REASONING = {"type": "reasoning", "id": "rs_1", "summary": [], "encrypted_content": _ENCRYPTED}
_ANSWER = {"role": "assistant", "content": "Look left, then right, then left again, and cross at a crosswalk."}


def _body(items: list[Any], **extra: Any) -> bytes:
    return orjson.dumps({"model": "gpt-5", "input": items, "include": ["reasoning.encrypted_content"], **extra})


def _count(items: list[Any], **extra: Any) -> int:
    return count_prompt(_body(items, **extra), url=_URL).tokens


def test_reasoning_of_a_finished_turn_is_not_billed() -> None:
    question = {"role": "user", "content": "How do I cross the street?"}
    follow_up = {"role": "user", "content": "What if there is no crosswalk?"}
    with_item = _count([question, _REASONING, _ANSWER, follow_up])
    without = _count([question, _ANSWER, follow_up])
    assert with_item == without
    # the same item while its turn continues (no later user message) is billed, by the fitted estimate
    open_turn = _count([question, _REASONING, _ANSWER]) - _count([question, _ANSWER])
    assert open_turn == framing_openai.reasoning_tokens(len(_ENCRYPTED)) > 2000


def test_reasoning_of_all_turns_is_billed_when_the_request_keeps_it() -> None:
    question = {"role": "user", "content": "How do I cross the street?"}
    follow_up = {"role": "user", "content": "And at night?"}
    kept = {"reasoning": {"context": "all_turns"}}
    added = _count([question, _REASONING, _ANSWER, follow_up], **kept) - _count([question, _ANSWER, follow_up], **kept)
    assert added == framing_openai.reasoning_tokens(len(_ENCRYPTED))


def test_a_tool_calling_turn_keeps_its_reasoning() -> None:
    """Items after the last user message (a call and its output) keep the turn open."""
    question = {"role": "user", "content": "Weather in Paris?"}
    call = {"type": "function_call", "call_id": "c1", "name": "weather", "arguments": "{\"city\":\"Paris\"}"}
    out = {"type": "function_call_output", "call_id": "c1", "output": "sunny"}
    added = _count([question, _REASONING, call, out]) - _count([question, call, out])
    assert added == framing_openai.reasoning_tokens(len(_ENCRYPTED))


def test_finished_reasoning_reads_only_reasoning_items_before_the_last_user_message() -> None:
    values = [{"role": "user", "content": "a"}, _REASONING, _ANSWER, {"role": "user", "content": "b"}, _REASONING]
    last = framing_openai.last_user(values)
    assert last == 3
    assert [framing_openai.finished_reasoning(v, i, last, False) for i, v in enumerate(values)] == [
        False, True, False, False, False]
    assert not any(framing_openai.finished_reasoning(v, i, last, True) for i, v in enumerate(values))
    assert framing_openai.last_user([_ANSWER, {"type": "message", "role": "user", "content": []}]) == 1
    assert framing_openai.last_user([_ANSWER, {"type": "function_call_output", "role": "user"}]) == -1


_POOL = [
    {"role": "user", "content": "next question"},
    {"type": "reasoning", "id": "rs_2", "summary": [], "encrypted_content": "gAAAAAB" + "cXVpZXQ" * 60},
    {"role": "assistant", "content": "an answer"},
    {"type": "function_call", "call_id": "c1", "name": "lookup", "arguments": "{}"},
    {"type": "function_call_output", "call_id": "c1", "output": "found"},
]


@st.composite
def _sessions(draw: st.DrawFn) -> list[bytes]:
    """A Responses session whose history grows (mostly appends, some
    inserts and deletes) with user messages, reasoning items, calls and results."""
    items: list[Any] = [{"role": "user", "content": "first"}]
    extra = draw(st.sampled_from([{}, {"reasoning": {"context": "all_turns"}}]))
    lines = []
    for _ in range(draw(st.integers(1, 8))):
        op = draw(st.sampled_from(["append", "append", "append", "insert", "delete"]))
        item = copy.deepcopy(draw(st.sampled_from(_POOL)))
        if op == "append":
            items = [*items, item]
        elif op == "insert":
            at = draw(st.integers(0, len(items)))
            items = [*items[:at], item, *items[at:]]
        elif len(items) > 1:
            at = draw(st.integers(0, len(items) - 1))
            items = items[:at] + items[at + 1:]
        lines.append(orjson.dumps({"provider": "openai-responses", "body": orjson.loads(_body(items, **extra))}))
    return lines


@given(_sessions())
def test_sessions_built_element_by_element_equal_a_fresh_build(lines: list[bytes]) -> None:
    """A later user message finishes the turn of reasoning items the builder
    kept from the previous request: each request still equals cache_prompt's."""
    n, _ = check(lines)
    assert n == len(lines)
