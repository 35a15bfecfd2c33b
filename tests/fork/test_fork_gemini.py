"""The Gemini placeholder fork (Qwen Code) case by case, and the Claude-style
fork, on small hand-written histories."""

from __future__ import annotations

import pytest

from fidelity.errors import ForkUnavailable
from fidelity.fork import claude_placeholder, fork_request
from fidelity.fork.gemini_placeholder import ForkPlan, child_message, plan
from fidelity.model import Message, Request, Route, Text, ToolCall, ToolResult, freeze

ASK = Message("user", (Text("look around"),))
CALLS = Message("assistant", (Text("two at once"), ToolCall("c1", "ls", {"p": "."}), ToolCall("c2", "Agent", {"prompt": "x"})))
ANSWERS = Message("user", (ToolResult("c1", "ls", freeze({"output": "a b"})), ToolResult("c2", "Agent", freeze({"output": "…"}))))
DONE = Message("assistant", (Text("done"),))


def test_child_message_layout():
    text = child_message("read the logs")
    assert text.startswith("<fork-boilerplate>\n") and "\n</fork-boilerplate>\n\nDirective: read the logs" in text
    assert text.endswith("Directive: read the logs")
    assert child_message("d", boilerplate="B") == "<fork-boilerplate>\nB\n</fork-boilerplate>\n\nDirective: d"


def test_model_text_ending_keeps_history_and_sends_the_child_message():
    history = (ASK, CALLS, ANSWERS, DONE)
    assert plan(history, "go") == ForkPlan(history, child_message("go"))


def test_model_calls_ending_adds_responses_directive_and_ack():
    result = plan((ASK, CALLS), "go")
    assert result.task_prompt == "Begin."
    assert result.history[:2] == (ASK, CALLS)
    responses = result.history[2]
    assert responses.role == "user"
    assert responses.parts == (
        ToolResult("c1", "ls", freeze({"output": "Fork started — processing in background"})),
        ToolResult("c2", "Agent", freeze({"output": "Fork started — processing in background"})),
        Text(child_message("go")),
    )
    assert result.history[3] == Message("assistant", (Text("Understood. Executing directive now."),))
    assert len(result.history) == 4


def test_user_ending_is_dropped():
    assert plan((ASK, CALLS, ANSWERS, DONE, ASK), "go") == ForkPlan((ASK, CALLS, ANSWERS, DONE), child_message("go"))
    assert plan((ASK,), "go") == ForkPlan((), child_message("go"))


def test_dropping_answers_leaves_open_calls_that_get_placeholders():
    # Qwen Code would leave CALLS unanswered here; fidelity answers them.
    result = plan((ASK, CALLS, ANSWERS), "go")
    assert result.history[:2] == (ASK, CALLS) and result.task_prompt == "Begin."
    assert [r.call_id for r in result.history[2].tool_results()] == ["c1", "c2"]


def test_empty_history():
    assert plan((), "go") == ForkPlan((), child_message("go"))
    assert plan((), "go").messages() == (Message("user", (Text(child_message("go")),)),)


def test_wording_is_configurable():
    result = plan((ASK, CALLS), "go", boilerplate="B", placeholder="P", ack="A", begin="S")
    assert result.history[2].tool_results()[0].content == {"output": "P"}
    assert result.history[2].parts[-1] == Text(child_message("go", boilerplate="B"))
    assert result.history[3].text() == "A" and result.task_prompt == "S"


def test_recursion_guard_names_the_reason():
    child = plan((ASK, CALLS), "go").messages()
    with pytest.raises(ForkUnavailable, match=r"^fork unavailable: .*<fork-boilerplate>.*recursion guard"):
        plan(child, "again")
    # the tag in a model message or a tool result is not a child marker
    assert plan((ASK, Message("assistant", (Text("<fork-boilerplate>"),))), "go").task_prompt


def test_claude_style_puts_results_then_child_message_in_one_user_message():
    messages = claude_placeholder.messages((ASK, CALLS), "go")
    assert messages[:2] == (ASK, CALLS)
    last = messages[2]
    assert last.role == "user" and len(messages) == 3
    assert last.parts == (
        ToolResult("c1", "ls", (Text("Fork started — processing in background"),)),
        ToolResult("c2", "Agent", (Text("Fork started — processing in background"),)),
        Text(child_message("go")),
    )
    assert claude_placeholder.messages((ASK, CALLS), "go", placeholder="P")[2].parts[0].content == (Text("P"),)


def test_claude_style_without_tool_use_appends_one_user_message():
    assert claude_placeholder.messages((ASK, DONE), "go") == (ASK, DONE, Message("user", (Text(child_message("go")),)))
    assert claude_placeholder.messages((), "go") == (Message("user", (Text(child_message("go")),)),)
    assert claude_placeholder.messages((ASK, DONE, ASK), "go")[:2] == (ASK, DONE)


def test_request_level_builders_keep_the_head():
    parent = Request(Route("gemini", "gemini-2.5-pro"), messages=(ASK, CALLS), params=freeze({"temperature": 0}))
    for name in ("gemini-placeholder", "claude-placeholder", "completed-turn", "spawn"):
        child = fork_request(parent, name, "go")
        assert (child.route, child.system, child.tools, child.params) == (parent.route, parent.system, parent.tools, parent.params)
    assert fork_request(parent, "gemini-placeholder", "go").messages == plan((ASK, CALLS), "go").messages()
    assert fork_request(parent, "completed-turn", "go").messages == (Message("user", (Text("go"),)),)
    assert fork_request(parent, "spawn", "go").messages == (Message("user", (Text("go"),)),)


def test_unknown_builder_is_named():
    from fidelity.errors import UnknownName

    with pytest.raises(UnknownName, match="fork builder 'nope'"):
        fork_request(Request(Route("a", "b")), "nope", "go")
