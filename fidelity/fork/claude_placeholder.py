"""Claude-style placeholder fork: the parent's last assistant message keeps
all its tool uses, each gets the same placeholder tool result, and the child
message follows in that same user message.

Source: Claude Code ``src/tools/AgentTool/forkSubagent.ts``
(``buildForkedMessages``, ``FORK_PLACEHOLDER_RESULT``), as mirrored publicly
(e.g. Gitlawb/openclaude). Rules and this builder's choices: docs/fork.md."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

from ..model import Message, Request, Text, ToolResult
from .balance import side_of
from .gemini_placeholder import DEFAULT_BOILERPLATE, child_message, ensure_not_in_fork_child

__all__ = ["PLACEHOLDER_TEXT", "messages", "fork_request"]

PLACEHOLDER_TEXT = "Fork started — processing in background"
"""Claude Code's ``FORK_PLACEHOLDER_RESULT``: every placeholder tool result's text."""


def messages(
    history: Sequence[Message],
    directive: str,
    *,
    placeholder: str = PLACEHOLDER_TEXT,
    boilerplate: str = DEFAULT_BOILERPLATE,
) -> tuple[Message, ...]:
    """The child's request messages (Claude Code ``buildForkedMessages``): the
    history without trailing user-side messages, then one user message with a
    placeholder result per tool use of the last assistant message and the child message."""
    ensure_not_in_fork_child(history)
    kept = tuple(history)
    while kept and side_of(kept[-1]) == "user":
        kept = kept[:-1]
    text = Text(child_message(directive, boilerplate=boilerplate))
    calls = kept[-1].tool_calls() if kept else ()
    results = tuple(ToolResult(call.id, call.name, (Text(placeholder),)) for call in calls)
    return kept + (Message("user", results + (text,)),)


def fork_request(parent: Request, directive: str, **options: str) -> Request:
    """The child's first request: the parent's head unchanged (Claude Code threads
    its rendered system prompt and tool pool into the fork), messages = :func:`messages`."""
    return replace(parent, messages=messages(parent.messages, directive, **options))
