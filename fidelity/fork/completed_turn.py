"""Completed-turn seed (DeepSeek Harness): the child starts with the parent's
session events up to the last completed turn.

Source: seed 002 (``@deepseek-ai/dsh-subagent-fork-in-process`` README,
"Seed boundary"): "Fork therefore computes the contiguous prefix ending at
the last ``turn/end``. The child sees all completed parent turns and none of
the in-flight turn. If the parent has not completed a turn yet, the seed is
empty and the child behaves like a fresh spawn." Seed 001 (the Agent Note on
one-shot fork children) adds that the seed is the only difference from a
spawn.

**The session header is not part of the seed.** In the recorded example
``examples/acp-agent/tests/snapshots/subagent-fork-in-process`` the child log
``session.1.jsonl`` starts with its own ``session`` header (new ``id``,
``parentSession``, ``seedLength: 42``), then lines 2-21 byte-identical to the
parent's lines 2-21 (first event after the header through the first
``turn/end``), then ``session/end-seed``. ``seedLength`` 42 counts those
events as DSH sequences them: one per event, except that a compacted
``*-chunks`` line stands for one event per chunk (``texts`` or ``args``
entries) — see :func:`seed_length`.
"""

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


def _body_start(events: Sequence[Mapping[str, Any]]) -> int:
    start = 0
    while start < len(events) and events[start]["type"] == HEADER_TYPE:
        start += 1
    return start


def _seed(events: Sequence[Mapping[str, Any]], end: int) -> tuple[Any, ...]:
    return tuple(freeze(event) for event in events[_body_start(events) : end])


def completed_turn_seed(events: Sequence[Mapping[str, Any]]) -> tuple[Any, ...]:
    """The events after the session header up to and including the last
    ``turn/end``; ``()`` when no turn has completed.

    The result holds frozen copies (:func:`~fidelity.model.freeze`: dicts
    become read-only ``FrozenDict`` in the same key order, lists tuples), so
    neither side can change the other; :func:`~fidelity.model.thaw` gives
    plain values. Bad input raises :class:`InputError` with the 1-based line.
    """
    _checked(events)
    for index in range(len(events) - 1, -1, -1):
        if events[index]["type"] == TURN_END:
            return _seed(events, index + 1)
    return ()


def seed_at(events: Sequence[Mapping[str, Any]], anchor_index: int) -> tuple[Any, ...]:
    """The seed of a fork anchored at ``events[anchor_index]``, floored
    forward to the first ``turn/end`` at or after the anchor: the child gets
    every turn completed by then and nothing of a turn still open there.

    Raises :class:`ForkUnavailable` when no turn ends at or after the anchor
    (the anchor sits in the in-flight turn), :class:`InputError` when the
    index is outside the log.
    """
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
    """The seed's length as DSH records it in the child header's
    ``seedLength``: one per event, a ``*-chunks`` event counting one per
    entry of its ``texts`` (or ``args``) list. Header events do not count.

    Checked against the recorded fork example (``seedLength: 42`` for 20
    event lines, one of them a 23-chunk ``reasoning-chunks``).
    """
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
    """The completed-turn rule on canonical messages: the prefix ending with
    the last assistant message that makes no tool call (the message that
    closes a turn); ``()`` when there is none.

    A trailing user prompt, an assistant message with open tool calls and
    their results are the in-flight turn and are left out.
    """
    for index in range(len(history) - 1, -1, -1):
        message = history[index]
        if message.role == "assistant" and not message.tool_calls():
            return tuple(history[: index + 1])
    return ()


#: roles of the messages that lead a Chat-style body's ``messages`` as its system prompt
_HEAD_ROLES = ("system", "developer")


def fork_request(parent: Request, directive: str) -> Request:
    """The child's first request: the parent's route, system, tools and
    parameters (a one-shot DSH fork child keeps the parent's header, seed
    001), messages = :func:`messages` then the directive verbatim as a user
    message ("the new task content verbatim", seed 002).

    A system prompt written as leading ``system``/``developer`` messages (how
    DeepSeek Harness sends it on Chat Completions) is head, not history: it
    stays when no turn has completed. DSH 0.1.0-rc.8's real fork child
    (``fixtures/harness-matrix/deepseek-harness-0.1.0-rc.8/fork``) keeps it."""
    lead = 0
    while lead < len(parent.messages) and parent.messages[lead].role in _HEAD_ROLES:
        lead += 1
    head, history = tuple(parent.messages[:lead]), parent.messages[lead:]
    return replace(parent, messages=head + messages(history) + (Message("user", (Text(directive),)),))
