"""Completed-turn seeds (DeepSeek Harness) on generated and recorded logs."""

from __future__ import annotations

import copy
import json

import pytest
from hypothesis import given
from hypothesis import strategies as st

from fidelity.errors import ForkUnavailable, InputError
from fidelity.fork import completed_turn_seed, event_problems, seed_at, seed_length
from fidelity.model import thaw
from fidelity.strategies import dsh_event_logs

FORK_EXAMPLE = "deepseek-harness/examples/acp-agent/tests/snapshots/subagent-fork-in-process"


def _turn_end_indices(events):
    return [i for i, e in enumerate(events) if e["type"] == "turn/end"]


@given(dsh_event_logs())
def test_seed_is_the_balanced_prefix_up_to_the_last_turn_end(events):
    original = copy.deepcopy(events)
    seed = completed_turn_seed(events)
    ends = _turn_end_indices(events)
    assert events == original  # input untouched
    if not ends:
        assert seed == ()
        return
    assert thaw(seed) == events[1 : ends[-1] + 1]  # header excluded
    assert event_problems(seed) == []


@given(dsh_event_logs(in_flight=True, min_turns=0))
def test_seed_never_contains_the_in_flight_turn(events):
    seed = completed_turn_seed(events)
    open_turn = max(e["data"]["turn"] for e in events if e["type"] == "turn/start")
    assert all((e.get("data") or {}).get("turn") != open_turn for e in seed)
    assert seed == completed_turn_seed(events[: len(seed) + 1])  # the open turn adds nothing
    assert event_problems(events) != []  # the raw log is unbalanced ...
    assert event_problems(seed) == []  # ... the seed is not


@given(dsh_event_logs(), st.data())
def test_seed_at_floors_forward_to_the_next_turn_end(events, data):
    anchor = data.draw(st.integers(0, len(events) - 1))
    later = [i for i in _turn_end_indices(events) if i >= anchor]
    if not later:
        with pytest.raises(ForkUnavailable, match="^fork unavailable: "):
            seed_at(events, anchor)
        return
    seed = seed_at(events, anchor)
    assert thaw(seed) == events[1 : later[0] + 1]
    assert event_problems(seed) == []


@given(dsh_event_logs())
def test_seed_is_detached_from_the_input(events):
    seed = completed_turn_seed(events)
    before = thaw(seed)
    for event in events:
        event["type"] = "changed"
    assert thaw(seed) == before


def test_no_completed_turn_gives_an_empty_seed():
    events = [{"type": "session"}, {"type": "turn/start", "data": {"turn": 1}}]
    assert completed_turn_seed(events) == ()
    with pytest.raises(ForkUnavailable):
        seed_at(events, 1)


@pytest.mark.parametrize("bad", ["not events", [{"data": {}}], [{"type": 3}], [[1]]])
def test_bad_events_are_input_errors(bad):
    with pytest.raises(InputError):
        completed_turn_seed(bad)


def test_anchor_outside_the_log_is_an_input_error():
    with pytest.raises(InputError, match="outside the log"):
        seed_at([{"type": "turn/end"}], 1)


def test_recorded_fork_child_starts_with_this_seed(shared_real):
    folder = shared_real / FORK_EXAMPLE
    parent = [json.loads(line) for line in (folder / "session.jsonl").read_text().splitlines()]
    child = [json.loads(line) for line in (folder / "session.1.jsonl").read_text().splitlines()]
    end_seed = next(i for i, e in enumerate(child) if e["type"] == "session/end-seed")
    # The parent forked during turn 2: its subagent_fork tool/call is open.
    fork_call = next(i for i, e in enumerate(parent) if e["type"] == "tool/call")
    seed = completed_turn_seed(parent[: fork_call + 1])
    assert thaw(seed) == child[1:end_seed]  # child's own header, then the seed
    assert seed_length(seed) == child[0]["seedLength"] == 42
    assert seed_at(parent, 5) == seed
    assert event_problems(parent[: fork_call + 1]) != []
    assert event_problems(seed) == []
