"""Gemini placeholder fork (Qwen Code): the child inherits the parent's
history, its open function calls get placeholder responses, and the history
ends with a model message before the task prompt is sent.

Source: seed 000 sections 3 and 4; QwenLM/qwen-code
``packages/core/src/agents/runtime/forkSubagent.ts`` (``buildForkedMessages``,
``buildChildMessage``, ``isInForkChild``) and ``packages/core/src/tools/agent.ts``
(the acknowledgement and ``'Begin.'``). The child-message helpers are shared
with the Claude-style builder. Rules: docs/fork.md."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace

from ..errors import ForkUnavailable
from ..model import FrozenDict, Message, Request, Text, ToolResult, freeze
from .balance import side_of

__all__ = [
    "FORK_BOILERPLATE_TAG",
    "DIRECTIVE_PREFIX",
    "DEFAULT_BOILERPLATE",
    "PLACEHOLDER_OUTPUT",
    "ACK_TEXT",
    "BEGIN_PROMPT",
    "ForkPlan",
    "child_message",
    "is_in_fork_child",
    "ensure_not_in_fork_child",
    "plan",
    "fork_request",
]

FORK_BOILERPLATE_TAG = "fork-boilerplate"
"""Tag that marks a child message (in history: "this is a fork child", seed 000 section 4)."""

DIRECTIVE_PREFIX = "Directive: "

DEFAULT_BOILERPLATE = (
    "You are a forked child of the agent whose conversation you see above. "
    "You share its context, but you are not that agent.\n"
    "- Carry out only the directive below, using your tools directly.\n"
    "- Do not start further forks or subagents.\n"
    "- Do not ask questions or wait for a reply; nobody is watching this run.\n"
    "- Finish with one short factual report of what you did and found."
)
"""fidelity's own wording inside the tag (any works if every sibling uses the same)."""

PLACEHOLDER_OUTPUT = "Fork started — processing in background"
"""Every placeholder ``functionResponse``'s ``output``: Qwen Code's ``FORK_PLACEHOLDER_RESULT``."""

ACK_TEXT = "Understood. Executing directive now."
"""The model acknowledgement Qwen Code appends after the responses (``agent.ts``)."""

BEGIN_PROMPT = "Begin."
"""Qwen Code's task prompt when the directive already sits in the history."""


@dataclass(frozen=True)
class ForkPlan:
    """A Gemini fork child's ``history`` (Qwen Code's ``extraHistory``) and the
    ``task_prompt`` sent as the next user message."""

    history: tuple[Message, ...]
    task_prompt: str

    def messages(self) -> tuple[Message, ...]:
        """History, then the task prompt as a user message."""
        return self.history + (Message("user", (Text(self.task_prompt),)),)


def child_message(directive: str, *, boilerplate: str = DEFAULT_BOILERPLATE, tag: str = FORK_BOILERPLATE_TAG) -> str:
    """The child message (Qwen Code ``buildChildMessage``): a ``<tag>`` block
    holding ``boilerplate``, then the directive last, so that siblings differ only at the end.

    >>> child_message("count files", boilerplate="Be brief.")
    '<fork-boilerplate>\\nBe brief.\\n</fork-boilerplate>\\n\\nDirective: count files'
    """
    return f"<{tag}>\n{boilerplate}\n</{tag}>\n\n{DIRECTIVE_PREFIX}{directive}"


def is_in_fork_child(history: Sequence[Message], *, tag: str = FORK_BOILERPLATE_TAG) -> bool:
    """True when a user message's text part contains ``<tag>``: the history
    belongs to a fork child (Qwen Code ``isInForkChild``, seed 000 section 4)."""
    marker = f"<{tag}>"
    return any(
        side_of(m) == "user" and any(isinstance(p, Text) and marker in p.text for p in m.parts)
        for m in history
    )


def ensure_not_in_fork_child(history: Sequence[Message], *, tag: str = FORK_BOILERPLATE_TAG) -> None:
    """Raise :class:`ForkUnavailable` inside a fork child (recursion guard)."""
    if is_in_fork_child(history, tag=tag):
        raise ForkUnavailable(
            f"fork unavailable: the history already contains <{tag}>, so this is a fork child; "
            "fork children do not fork again (recursion guard)"
        )


def _placeholder_responses(model_message: Message, placeholder: str) -> tuple[ToolResult, ...]:
    response: FrozenDict = freeze({"output": placeholder})
    return tuple(ToolResult(call.id, call.name, response) for call in model_message.tool_calls())


def plan(
    history: Sequence[Message],
    directive: str,
    *,
    boilerplate: str = DEFAULT_BOILERPLATE,
    placeholder: str = PLACEHOLDER_OUTPUT,
    ack: str = ACK_TEXT,
    begin: str = BEGIN_PROMPT,
) -> ForkPlan:
    """The Gemini fork child's history and task prompt (seed 000 section 3; the
    table of cases and the one deliberate difference from Qwen Code are in
    docs/fork.md, "Gemini placeholder fork"). Raises :class:`ForkUnavailable`
    when the history already holds the child-message tag (recursion guard)."""
    ensure_not_in_fork_child(history)
    kept = tuple(history)
    while kept and side_of(kept[-1]) == "user":
        kept = kept[:-1]
    message = child_message(directive, boilerplate=boilerplate)
    if not kept or not kept[-1].tool_calls():
        return ForkPlan(kept, message)
    last = kept[-1]
    clone = replace(last)
    responses = Message("user", _placeholder_responses(last, placeholder) + (Text(message),))
    acknowledgement = Message("assistant", (Text(ack),))
    return ForkPlan(kept[:-1] + (clone, responses, acknowledgement), begin)


def fork_request(parent: Request, directive: str, **options: str) -> Request:
    """The child's first request: the parent's route, system instruction, tools and
    generation parameters unchanged (seed 000 section 2), messages = :func:`plan`
    history + task prompt; ``options`` go to :func:`plan`."""
    return replace(parent, messages=plan(parent.messages, directive, **options).messages())
