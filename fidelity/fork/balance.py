"""Balance checks for fork seeds: does a history hold up as a request prefix?

Sources: the DeepSeek Harness fork README (seed 002, "Seed boundary": no open
tool call in a seed) and the Qwen Code design (seed 000 section 3: Gemini
alternation, ending on a model message). Both checkers return every
:class:`Problem` (empty when balanced) and never change their input."""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from ..model import Message, ToolResult

__all__ = ["Problem", "history_problems", "event_problems", "MODEL_SIDE", "side_of"]

MODEL_SIDE = "assistant"

Side = Literal["user", "assistant"]


@dataclass(frozen=True)
class Problem:
    """One balance problem: where (message or event index) and what."""

    index: int
    text: str
    where: str = "message"

    def __str__(self) -> str:
        return f"{self.where} {self.index}: {self.text}"


def side_of(message: Message) -> Side:
    """``assistant`` for the model's messages, ``user`` for everything the client sends."""
    return "assistant" if message.role == MODEL_SIDE else "user"


def history_problems(
    messages: Sequence[Message],
    *,
    alternation: bool = True,
    ends_with: Side | None = None,
) -> list[Problem]:
    """Every balance problem of a canonical message history: each tool call
    answered exactly once (matching name) before the next assistant message, no
    orphan or misplaced result, no duplicate call id, no empty message, roles
    ``user``/``assistant``/``tool`` only; with ``alternation`` the two sides
    alternate; with ``ends_with`` a non-empty history ends on that side."""
    problems: list[Problem] = []
    last_assistant: int | None = None
    for index, message in enumerate(messages):
        if message.role not in ("user", "assistant", "tool"):
            problems.append(Problem(index, f"unexpected role {message.role!r} in a history"))
        if not message.parts:
            problems.append(Problem(index, "message has no parts"))
        if alternation and index > 0 and side_of(messages[index - 1]) == side_of(message):
            problems.append(Problem(index, f"two {side_of(message)} messages in a row"))
        if side_of(message) == "assistant":
            if message.tool_results():
                problems.append(Problem(index, "tool result inside an assistant message"))
            problems.extend(_call_problems(messages, index))
            last_assistant = index
            continue
        calls = {c.id for c in messages[last_assistant].tool_calls()} if last_assistant is not None else set()
        for result in message.tool_results():
            if result.call_id not in calls:
                problems.append(Problem(index, f"tool result {result.call_id!r} answers no call of the assistant message before it"))
    if ends_with is not None and messages and side_of(messages[-1]) != ends_with:
        problems.append(Problem(len(messages) - 1, f"history ends with a {side_of(messages[-1])} message, not {ends_with}"))
    return problems


def _call_problems(messages: Sequence[Message], index: int) -> list[Problem]:
    calls = messages[index].tool_calls()
    problems: list[Problem] = []
    for call_id, count in Counter(c.id for c in calls).items():
        if count > 1:
            problems.append(Problem(index, f"tool call id {call_id!r} used {count} times"))
    answers: list[ToolResult] = []
    for later in messages[index + 1 :]:
        if side_of(later) == "assistant":
            break
        answers.extend(later.tool_results())
    for call in calls:
        matching = [r for r in answers if r.call_id == call.id]
        if not matching:
            problems.append(Problem(index, f"tool call {call.id!r} ({call.name}) has no result"))
        elif len(matching) > 1:
            problems.append(Problem(index, f"tool call {call.id!r} ({call.name}) has {len(matching)} results"))
        for result in matching:
            if result.name is not None and result.name != call.name:
                problems.append(Problem(index, f"result for {call.id!r} names {result.name!r}, the call names {call.name!r}"))
    return problems


def _tool_result_id(data: Mapping[str, Any]) -> str | None:
    message = data.get("message")
    if not isinstance(message, Mapping):
        return None
    source = message.get("source")
    call_id = source.get("callId") if isinstance(source, Mapping) else None
    if isinstance(call_id, str):
        return call_id
    for part in message.get("content") or ():
        call_id = part.get("toolCallId") if isinstance(part, Mapping) else None
        if isinstance(call_id, str):
            return call_id
    return None


def event_problems(events: Sequence[Mapping[str, Any]]) -> list[Problem]:
    """Every balance problem of a DeepSeek Harness event seed (header events
    skipped): each ``tool/call`` has exactly one later ``tool/result``, no result
    lacks a call, ``turn/start``/``turn/end`` pair up, and a non-empty seed ends
    with ``turn/end`` (seed 002, "Seed boundary")."""
    problems: list[Problem] = []
    open_calls: dict[str, int] = {}
    answered: set[str] = set()
    open_turn: int | None = None
    last_type: str | None = None
    last_index = -1
    for index, event in enumerate(events):
        kind = event.get("type")
        if kind == "session":
            continue
        data = event.get("data")
        data = data if isinstance(data, Mapping) else {}
        last_type, last_index = kind, index
        if kind == "turn/start":
            if open_turn is not None:
                problems.append(Problem(index, f"turn/start while the turn at event {open_turn} is open", "event"))
            open_turn = index
        elif kind == "turn/end":
            if open_turn is None:
                problems.append(Problem(index, "turn/end without turn/start", "event"))
            open_turn = None
        elif kind == "tool/call":
            call_id = data.get("callId")
            if call_id in open_calls or call_id in answered:
                problems.append(Problem(index, f"tool call id {call_id!r} used twice", "event"))
            open_calls[str(call_id)] = index
        elif kind == "tool/result":
            call_id = _tool_result_id(data)
            if call_id in open_calls:
                del open_calls[call_id]
                answered.add(call_id)
            elif call_id in answered:
                problems.append(Problem(index, f"second result for tool call {call_id!r}", "event"))
            else:
                problems.append(Problem(index, f"tool result {call_id!r} answers no call", "event"))
    for call_id, index in open_calls.items():
        problems.append(Problem(index, f"tool call {call_id!r} has no result", "event"))
    if open_turn is not None:
        problems.append(Problem(open_turn, "turn is still in flight (no turn/end)", "event"))
    elif last_type is not None and last_type != "turn/end":
        problems.append(Problem(last_index, f"seed ends with {last_type!r}, not turn/end", "event"))
    return problems
