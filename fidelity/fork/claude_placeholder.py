"""Claude-style placeholder fork: the parent's last assistant message keeps
all its tool uses, each gets the same placeholder tool result, and the child
message follows in that same user message.

Source: Claude Code's ``src/tools/AgentTool/forkSubagent.ts``
(``buildForkedMessages``; the constant ``FORK_PLACEHOLDER_RESULT =
'Fork started — processing in background'``), known from the CLI's sources
as mirrored publicly (e.g. the GitHub repository Gitlawb/openclaude). Its
docstring states the design goal: "all fork children must produce
byte-identical API request prefixes … Only the final text block differs per
child". Seed 000's architecture diagram shows the same shape for Qwen Code
(``[...MsgN | placeholder results | "Research A"]``).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

from ..model import Message, Request, Text, ToolResult
from .balance import side_of
from .gemini_placeholder import DEFAULT_BOILERPLATE, child_message, ensure_not_in_fork_child

__all__ = ["PLACEHOLDER_TEXT", "messages", "fork_request"]

PLACEHOLDER_TEXT = "Fork started — processing in background"
"""Claude Code's ``FORK_PLACEHOLDER_RESULT``: the text of every placeholder
tool result, identical across siblings so that their prefixes match."""


def messages(
    history: Sequence[Message],
    directive: str,
    *,
    placeholder: str = PLACEHOLDER_TEXT,
    boilerplate: str = DEFAULT_BOILERPLATE,
) -> tuple[Message, ...]:
    """The child's request messages.

    Rule (Claude Code ``buildForkedMessages``):

    * the parent's last assistant message has tool uses: keep it unchanged,
      then one user message with one tool result per tool use, in call
      order, each ``call_id`` = the tool use's id and content
      ``(Text(placeholder),)`` (Claude Code sends ``[{type: "text", text:
      FORK_PLACEHOLDER_RESULT}]``), followed — in the same user message,
      after the results — by the child message as a text part;
    * no tool use (or empty history): the history, then one user message
      holding only the child message.

    Choices of this builder where Claude Code has no case: a trailing
    user-side message (the parent forks from a history whose last turn is a
    user message) is dropped first, as Qwen Code does (seed 000 section 3),
    so that the child never carries two user messages in a row or a result
    twice. The recursion guard of the Gemini builder applies (Claude Code's
    ``isInForkChild`` looks for the same ``<fork-boilerplate>`` tag).
    """
    ensure_not_in_fork_child(history)
    kept = tuple(history)
    while kept and side_of(kept[-1]) == "user":
        kept = kept[:-1]
    text = Text(child_message(directive, boilerplate=boilerplate))
    calls = kept[-1].tool_calls() if kept else ()
    results = tuple(ToolResult(call.id, call.name, (Text(placeholder),)) for call in calls)
    return kept + (Message("user", results + (text,)),)


def fork_request(parent: Request, directive: str, **options: str) -> Request:
    """The child's first request: the parent's route, system, tools and
    parameters unchanged (Claude Code threads the parent's rendered system
    prompt and exact tool pool into the fork), messages = :func:`messages`.
    ``options``: ``placeholder``, ``boilerplate``."""
    return replace(parent, messages=messages(parent.messages, directive, **options))
