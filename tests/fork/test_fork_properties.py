"""Properties every fork builder keeps, checked on generated parents.

Byte comparisons use ``_bytes``: a canonical JSON of the dataclass tree
(class names included, key order kept, ASCII escapes), so "byte-identical"
here means identical in every field and every character.
"""

from __future__ import annotations

import json
import pickle
from dataclasses import fields, is_dataclass, replace
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from fidelity.errors import ForkUnavailable
from fidelity.fork import BUILDERS, completed_turn, fork_request, gemini_placeholder, history_problems, is_in_fork_child
from fidelity.fork.balance import side_of
from fidelity.model import Message, Text
from fidelity.strategies import directives, histories, requests

ANY_ENDING = ("complete", "in_flight", "user", "empty")
GUARDED = ("gemini-placeholder", "claude-placeholder", "cache-safe", "cache-safe-fallback")
SENTINEL = "\ue000SIBLING\ue001"  # private use: never produced by fidelity.strategies


def _plain(value: Any) -> Any:
    if is_dataclass(value):
        return {"@": type(value).__name__, **{f.name: _plain(getattr(value, f.name)) for f in fields(value)}}
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    return value


def _bytes(value: Any) -> bytes:
    return json.dumps(_plain(value), ensure_ascii=True, separators=(",", ":")).encode()


def _esc(text: str) -> bytes:
    return json.dumps(text, ensure_ascii=True)[1:-1].encode()


parents = requests(endings=ANY_ENDING, surrogate_escapes=True)


@given(parent=parents, directive=directives())
def test_siblings_are_byte_identical_except_the_directive(parent, directive):
    for name in BUILDERS:
        template = _bytes(fork_request(parent, name, SENTINEL))
        assert template.count(_esc(SENTINEL)) == 1, name
        before, after = template.split(_esc(SENTINEL))
        assert _bytes(fork_request(parent, name, directive)) == before + _esc(directive) + after, name


@given(parent=parents, directive=directives())
def test_builders_never_mutate_their_input(parent, directive):
    frozen_bytes, pickled, digest = _bytes(parent), pickle.dumps(parent), hash(parent)
    for name in BUILDERS:
        fork_request(parent, name, directive)
        assert _bytes(parent) == frozen_bytes, name
        assert pickle.dumps(parent) == pickled, name
        assert hash(parent) == digest, name


@given(parent=parents, directive=directives())
def test_every_child_request_is_balanced(parent, directive):
    for name in BUILDERS:
        child = fork_request(parent, name, directive)
        assert history_problems(child.messages, ends_with="user") == [], name


@given(parent=parents, directive=directives())
def test_child_starts_with_the_parents_history_up_to_its_open_user_turn(parent, directive):
    kept = len(parent.messages)
    while kept and side_of(parent.messages[kept - 1]) == "user":
        kept -= 1
    for name in GUARDED:
        child = fork_request(parent, name, directive)
        assert child.messages[:kept] == parent.messages[:kept], name
        assert len(child.messages) > kept, name


@given(history=histories(endings=ANY_ENDING, surrogate_escapes=True), directive=directives())
def test_gemini_seed_is_balanced_alternating_and_ends_with_model(history, directive):
    plan = gemini_placeholder.plan(history, directive)
    assert history_problems(plan.history, alternation=True, ends_with="assistant") == []
    assert history_problems(plan.messages(), alternation=True, ends_with="user") == []


@given(history=histories(endings=ANY_ENDING, tool_results_in="tool"), directive=directives())
def test_gemini_seed_is_balanced_with_openai_style_tool_messages(history, directive):
    plan = gemini_placeholder.plan(history, directive)
    assert history_problems(plan.history, alternation=False, ends_with="assistant") == []


@given(history=histories(endings=ANY_ENDING))
def test_completed_turn_seed_is_a_balanced_prefix_without_the_in_flight_turn(history):
    seed = completed_turn.messages(history)
    assert seed == history[: len(seed)]
    assert history_problems(seed, ends_with="assistant") == []
    rest = history[len(seed):]
    assert not any(m.role == "assistant" and not m.tool_calls() for m in rest)


@given(parent=parents, directive=directives(), reply=st.booleans())
def test_recursion_guard_fires_inside_every_child(parent, directive, reply):
    for name in GUARDED:
        child = fork_request(parent, name, directive)
        if reply:  # the child has answered once and now tries to fork
            child = replace(child, messages=child.messages + (Message("assistant", (Text("working"),)),))
        assert is_in_fork_child(child.messages), name
        for again in GUARDED:
            with pytest.raises(ForkUnavailable, match="recursion guard"):
                fork_request(child, again, directive)
