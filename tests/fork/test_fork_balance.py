"""The balance checker finds each kind of problem and passes valid histories."""

from __future__ import annotations

from fidelity.fork import history_problems
from fidelity.model import Message, Text, ToolCall, ToolResult


def _user(*parts):
    return Message("user", parts or (Text("hi"),))


def _model(*parts):
    return Message("assistant", parts or (Text("ok"),))


def _texts(problems):
    return [p.text for p in problems]


def test_balanced_history_has_no_problems():
    history = [_user(), _model(ToolCall("a", "ls"), ToolCall("b", "cat")),
               _user(ToolResult("b", "cat", "x"), ToolResult("a", None, "y", is_error=True)), _model()]
    assert history_problems(history, ends_with="assistant") == []


def test_each_problem_is_reported():
    assert _texts(history_problems([_user(), _model(ToolCall("a", "ls"))])) == ["tool call 'a' (ls) has no result"]
    assert "has 2 results" in _texts(history_problems(
        [_model(ToolCall("a", "ls")), _user(ToolResult("a", None, "1"), ToolResult("a", None, "2"))]))[0]
    assert "answers no call" in _texts(history_problems([_model(), _user(ToolResult("z", None, ""))]))[0]
    assert "names 'rm'" in _texts(history_problems([_model(ToolCall("a", "ls")), _user(ToolResult("a", "rm", ""))]))[0]
    assert "used 2 times" in _texts(history_problems(
        [_model(ToolCall("a", "ls"), ToolCall("a", "ls")), _user(ToolResult("a", None, ""))]))[0]
    assert _texts(history_problems([_user(), _user()])) == ["two user messages in a row"]
    assert history_problems([_user(), _user()], alternation=False) == []
    assert _texts(history_problems([_user()], ends_with="assistant")) == ["history ends with a user message, not assistant"]
    assert "no parts" in _texts(history_problems([Message("user", ())]))[0]
    assert "unexpected role" in _texts(history_problems([Message("system", (Text("s"),))]))[0]


def test_results_must_answer_the_assistant_message_just_before():
    history = [_model(ToolCall("a", "ls")), _user(ToolResult("a", None, "")), _model(), _user(ToolResult("a", None, ""))]
    assert _texts(history_problems(history)) == ["tool result 'a' answers no call of the assistant message before it"]


def test_openai_style_tool_messages_count_as_the_user_side():
    history = [_user(), _model(ToolCall("a", "ls"), ToolCall("b", "ls")),
               Message("tool", (ToolResult("a", None, ""),)), Message("tool", (ToolResult("b", None, ""),)), _model()]
    assert history_problems(history, alternation=False, ends_with="assistant") == []
