"""fidelity.strategies generates what its names promise."""

from __future__ import annotations

import json
import unicodedata

import orjson
from hypothesis import Phase, given, settings

from fidelity.fork import event_problems, history_problems
from fidelity.model import Request, ToolCall, freeze
from fidelity.strategies import (
    dsh_event_logs,
    histories,
    json_schemas,
    requests,
    tool_calls,
    unicode_text,
)


def _calls(history):
    return [c for m in history for c in m.tool_calls()]


@given(histories(endings=("complete",), min_turns=1))
def test_complete_histories_are_balanced_and_end_with_a_closing_model_message(history):
    assert history_problems(history, ends_with="assistant") == []
    assert history[-1].role == "assistant" and not history[-1].tool_calls()
    ids = [c.id for c in _calls(history)]
    assert len(ids) == len(set(ids))


@given(histories(endings=("in_flight",)))
def test_in_flight_histories_end_with_unanswered_calls(history):
    last = history[-1]
    assert last.role == "assistant" and last.tool_calls()
    problems = history_problems(history, ends_with="assistant")
    assert {p.index for p in problems} == {len(history) - 1}
    assert len(problems) == len(last.tool_calls())


@given(histories(endings=("user",)))
def test_user_ended_histories_are_balanced_and_end_with_a_user_message(history):
    assert history[-1].role == "user"
    assert history_problems(history, ends_with="user") == []


@given(histories(endings=("empty",)))
def test_empty_histories(history):
    assert history == ()


@given(histories(tool_results_in="tool", endings=("complete", "user")))
def test_openai_style_histories_put_each_result_in_a_tool_message(history):
    assert history_problems(history, alternation=False) == []
    for message in history:
        if message.tool_results():
            assert message.role == "tool" and len(message.parts) == 1


@given(requests())
def test_requests_are_ready_to_send(request):
    assert isinstance(request, Request)
    assert request.messages and request.messages[-1].role == "user"
    assert history_problems(request.messages, ends_with="user") == []
    names = {t.name for t in request.tools}
    assert len(names) == len(request.tools)
    if names:
        assert {c.name for c in _calls(request.messages)} <= names
    orjson.dumps(request)  # serialisable as generated (no lone surrogates by default)


@given(tool_calls(surrogate_escapes=True))
def test_arguments_json_spells_the_arguments(call):
    assert isinstance(call, ToolCall)
    if call.arguments_json is not None:
        assert freeze(json.loads(call.arguments_json)) == call.arguments


@given(unicode_text(max_size=30))
def test_text_has_no_surrogates_or_private_use(text):
    assert not any(unicodedata.category(ch) in ("Cs", "Co") for ch in text)
    text.encode("utf-8")


def _seen(strategy, features):
    """Draw 200 examples (no shrinking) and return the features that held for at least one."""
    seen = set()

    @settings(max_examples=200, phases=[Phase.generate], derandomize=True, database=None)
    @given(strategy)
    def collect(value):
        seen.update(name for name, holds in features.items() if holds(value))

    collect()
    return seen


def test_histories_cover_the_hard_cases():
    features = {
        "parallel calls": lambda h: any(len(m.tool_calls()) >= 2 for m in h),
        "tool errors": lambda h: any(r.is_error for m in h for r in m.tool_results()),
        "response objects": lambda h: any(isinstance(r.content, dict) for m in h for r in m.tool_results()),
        "results out of call order": lambda h: any(
            [r.call_id for r in b.tool_results()] != [c.id for c in a.tool_calls()][: len(b.tool_results())]
            for a, b in zip(h, h[1:]) if a.tool_calls()),
        "reasoning": lambda h: any(p.kind == "reasoning" for m in h for p in m.parts),
        "CJK": lambda h: any("\u4e00" <= ch <= "\u9fff" for m in h for ch in m.text()),
        "emoji": lambda h: any(ord(ch) >= 0x1F300 for m in h for ch in m.text()),
        "combining marks": lambda h: any(unicodedata.combining(ch) for m in h for ch in m.text()),
        "escaped lone surrogates": lambda h: any(
            c.arguments_json and "\\ud" in c.arguments_json.lower() for m in h for c in m.tool_calls()),
    }
    assert _seen(histories(endings=("complete", "user", "in_flight"), surrogate_escapes=True), features) == set(features)


def test_schemas_vary_their_key_order():
    features = {
        "top level": lambda s: next(iter(s)) != "type",
        "nested": lambda s: any(isinstance(v, dict) and next(iter(v)) != "type" for v in s.get("properties", {}).values()),
    }
    assert _seen(json_schemas(), features) == set(features)


@given(dsh_event_logs(in_flight=False))
def test_completed_dsh_logs_are_balanced(events):
    assert events[0]["type"] == "session"
    assert event_problems(events) == []
    assert json.loads(json.dumps(events)) == events  # plain JSON, as a log reader yields it


@given(dsh_event_logs(in_flight=True))
def test_in_flight_dsh_logs_have_an_open_turn(events):
    assert any("in flight" in p.text for p in event_problems(events))
    assert events[-1]["type"] != "turn/end"
