"""Completed-turn seed (DeepSeek Harness): the child starts with the parent's
session events up to the last completed turn.

Source: seed 002 (``@deepseek-ai/dsh-subagent-fork-in-process`` README,
"Seed boundary") and seed 001; the session header is not part of the seed.
The recorded example and how ``seedLength`` counts: docs/fork.md."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import replace
from typing import Any

from ..errors import ForkUnavailable, InputError
from ..model import Message, Request, Text, freeze

__all__ = [
    "HEADER_TYPE",
    "completed_turn_seed",
    "seed_at",
    "seed_length",
    "messages",
    "fork_request",
]

HEADER_TYPE = "session"
TURN_END = "turn/end"


def _checked(events: Sequence[Mapping[str, Any]]) -> Sequence[Mapping[str, Any]]:
    if isinstance(events, (str, bytes, bytearray)) or not isinstance(events, Sequence):
        raise InputError("expected a sequence of session events")
    for index, event in enumerate(events):
        if not isinstance(event, Mapping) or not isinstance(event.get("type"), str):
            raise InputError('a session event must be an object with a string "type"', line=index + 1)
    return events


def _seed(events: Sequence[Mapping[str, Any]], end: int) -> tuple[Any, ...]:
    """``events[:end]`` after the session header, frozen."""
    start = 0
    while start < len(events) and events[start]["type"] == HEADER_TYPE:
        start += 1
    return tuple(freeze(event) for event in events[start:end])


def completed_turn_seed(events: Sequence[Mapping[str, Any]]) -> tuple[Any, ...]:
    """The events after the session header up to and including the last
    ``turn/end``, frozen (:func:`~fidelity.model.freeze`); ``()`` when no turn
    has completed. Bad input raises :class:`InputError` with the 1-based line."""
    _checked(events)
    for index in range(len(events) - 1, -1, -1):
        if events[index]["type"] == TURN_END:
            return _seed(events, index + 1)
    return ()


def seed_at(events: Sequence[Mapping[str, Any]], anchor_index: int) -> tuple[Any, ...]:
    """The seed of a fork anchored at ``events[anchor_index]``, floored forward to
    the first ``turn/end`` at or after the anchor. Raises :class:`ForkUnavailable`
    when no turn ends there, :class:`InputError` when the index is outside the log."""
    _checked(events)
    if not 0 <= anchor_index < len(events):
        raise InputError(f"anchor index {anchor_index} is outside the log of {len(events)} events")
    for index in range(anchor_index, len(events)):
        if events[index]["type"] == TURN_END:
            return _seed(events, index + 1)
    raise ForkUnavailable(
        f"fork unavailable: no turn/end at or after event {anchor_index}; "
        "the anchor lies in a turn that has not completed"
    )


def seed_length(seed: Sequence[Mapping[str, Any]]) -> int:
    """The seed's length as DSH records it in ``seedLength``: one per event, a
    ``*-chunks`` event one per entry of its ``texts`` (or ``args``); header
    events do not count."""
    total = 0
    for event in seed:
        kind = event.get("type", "")
        if kind == HEADER_TYPE:
            continue
        data = event.get("data")
        chunks = None
        if kind.endswith("-chunks") and isinstance(data, Mapping):
            chunks = data.get("texts", data.get("args"))
        total += len(chunks) if isinstance(chunks, (list, tuple)) else 1
    return total


def messages(history: Sequence[Message]) -> tuple[Message, ...]:
    """The completed-turn rule on canonical messages: the prefix ending with the
    last assistant message that makes no tool call; ``()`` when there is none."""
    for index in range(len(history) - 1, -1, -1):
        message = history[index]
        if message.role == "assistant" and not message.tool_calls():
            return tuple(history[: index + 1])
    return ()


#: roles of the messages that lead a Chat-style body's ``messages`` as its system prompt
_HEAD_ROLES = ("system", "developer")


def fork_request(parent: Request, directive: str) -> Request:
    """The child's first request: the parent's route, system, tools and parameters
    (seed 001), :func:`messages`, then the directive verbatim as a user message
    (seed 002). Leading ``system``/``developer`` messages are head, not history:
    they stay when no turn has completed."""
    lead = 0
    while lead < len(parent.messages) and parent.messages[lead].role in _HEAD_ROLES:
        lead += 1
    head, history = tuple(parent.messages[:lead]), parent.messages[lead:]
    return replace(parent, messages=head + messages(history) + (Message("user", (Text(directive),)),))
