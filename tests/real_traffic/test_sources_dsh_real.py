"""The DSH reader against the recorded deepseek-harness logs in ../shared/real."""

from __future__ import annotations

from pathlib import Path

import pytest

from fidelity.model import Reasoning, Route, Text, ToolCall
from fidelity.sources.dsh import (
    Session,
    find_sessions,
    read_session,
    sidecars,
    step_messages,
    step_request,
)

FORK = "deepseek-harness/examples/acp-agent/tests/snapshots/subagent-fork-in-process"
#: apps/web/cordis-tool-round is hand-authored: its chunk rows and its
#: assistant/message disagree (different tool-call ids), so its
#: sourceEventSeqs do not line up with the rows.
HAND_AUTHORED = {"cordis-tool-round"}


def _at(session: Session, seq: int):
    for event in session.events:
        if event.seq <= seq < event.seq + event.span:
            return event
    return None


def test_every_recorded_log_reads(shared_real: Path) -> None:
    groups = find_sessions(shared_real / "deepseek-harness")
    sessions = [s for g in groups for s in g.sessions()]
    assert len(groups) == 30 and len(sessions) == 39
    steps = 0
    for s in sessions:
        for step in s.steps():
            step_messages(s, step.turn, step.step)
            steps += 1
    assert steps == 97  # one per step/start in the corpus
    children = [s for s in sessions if s.is_child]
    assert len(children) == 9 and all(c.index >= 1 for c in children)


def test_seq_numbering_matches_source_event_seqs(shared_real: Path) -> None:
    """Packed chunk rows count one seq per element: every assistant/message's
    sourceEventSeqs ends on the finish chunk just before it, and every
    tool/result's points at its tool/call."""
    checked = 0
    for group in find_sessions(shared_real / "deepseek-harness"):
        if group.name in HAND_AUTHORED:
            continue
        for s in group.sessions():
            for event in s.events:
                seqs = event.record.get("sourceEventSeqs")
                if not seqs:
                    continue
                if event.type == "assistant/message":
                    last = _at(s, seqs[-1])
                    assert last.type == "assistant/chunk" and last.data["chunk"]["type"] == "finish"
                    assert seqs[-1] == event.seq - 1
                elif event.type == "tool/result":
                    assert _at(s, seqs[0]).type == "tool/call"
                checked += 1
    assert checked >= 140


def test_fork_child_seed_equals_parent_first_turn(shared_real: Path) -> None:
    """The child's seed (events before session/end-seed) equals the parent's
    events up to and including its first turn/end: same values, same seq
    count as the header's seedLength, and here even the same line bytes."""
    folder = shared_real / FORK
    parent = read_session(folder / "session.jsonl")
    child = read_session(folder / "session.1.jsonl")
    assert child.parent_id == parent.id and child.origin == "subagent"
    first_end = next(i for i, e in enumerate(parent.events) if e.type == "turn/end")
    parent_prefix = parent.events[: first_end + 1]
    seed = child.seed_events()
    assert [e.record for e in seed] == [e.record for e in parent_prefix]
    assert sum(e.span for e in seed) == child.seed_length == 42
    assert len(seed) == 20  # 20 lines stand for 42 events (packed reasoning rows)
    parent_lines = (folder / "session.jsonl").read_bytes().split(b"\n")
    child_lines = (folder / "session.1.jsonl").read_bytes().split(b"\n")
    assert parent_lines[1:21] == child_lines[1:21]  # byte-identical, not re-serialised
    end_seed = child.events[len(seed)]
    assert end_seed.type == "session/end-seed" and end_seed.seq == child.seed_length


def test_fork_usage_and_requests(shared_real: Path) -> None:
    folder = shared_real / FORK
    parent = read_session(folder / "session.jsonl")
    child = read_session(folder / "session.1.jsonl")
    assert parent.step(1, 1).usage.input_tokens == 2885 and parent.step(1, 1).usage.cache_read_tokens == 0
    own = child.step(2, 1)
    assert (own.usage.input_tokens, own.usage.cache_read_tokens) == (97, 2816)
    assert own.header.reason == "resume" and own.header.revision == 1
    sc = sidecars(folder, child=1)
    assert sc.system_path.parent.name == "text-turn" and sc.tools_path.parent.name == "text-turn"
    req = step_request(child, 2, 1, sidecars=sc)
    assert req.route == Route("deepseek", "deepseek-v4-flash")
    assert req.system[0].text.startswith("You are an AI agent powered by DeepSeek Harness.")
    assert not req.system[0].text.endswith("\n")
    assert len(req.tools) == 19 and "subagent_fork" in [t.name for t in req.tools]
    parent_first = step_messages(parent, 1, 1)
    # the child's request starts with the parent's whole first-turn transcript ...
    assert req.messages[: len(parent_first)] == parent_first
    assert req.messages[2].role == "assistant" and isinstance(req.messages[2].parts[0], Reasoning)
    # ... then its own prompt and a fresh runtime-context snapshot after it
    assert req.messages[3].text().startswith("What is the project codeword")
    assert req.messages[4].text().startswith("Current runtime context.")
    assert len(req.messages) == 5
    # the parent's tool call keeps the model's exact argument string
    call = step_messages(parent, 2, 2)[4].parts[1]
    assert isinstance(call, ToolCall) and call.arguments_json.startswith('{"description": "Recall')


def test_snapshot_messages_stay_in_place(shared_real: Path) -> None:
    parent = read_session(shared_real / FORK / "session.jsonl")
    texts = [m.text()[:24] for m in step_messages(parent, 2, 1)]
    assert texts[1] == "Current runtime context."
    assert sum(t == "Current runtime context." for t in texts) == 1


def test_inbox_splices_never_reach_the_surface_on_their_own(shared_real: Path) -> None:
    """Every message an agent/inbox/spliced row queues reaches the surface
    only as a later user/message with the same id, or never (its turn failed)."""
    delivered = pending = 0
    for group in find_sessions(shared_real / "deepseek-harness"):
        for s in group.sessions():
            surface_ids = {e.data.get("id") for e in s.events if e.type == "user/message"}
            for e in s.events:
                if e.type != "agent/inbox/spliced":
                    continue
                assert e.surface_op is None
                for m in e.data.get("inserted", ()):
                    if m.get("id") in surface_ids:
                        delivered += 1
                    else:
                        pending += 1
    assert delivered >= 25 and pending >= 1


def test_compaction_recovery_replaces_the_first_prompt(shared_real: Path) -> None:
    s = read_session(shared_real / "deepseek-harness/examples/headless-agent/tests/snapshots/compaction-recovery/session.jsonl")
    before, after = step_messages(s, 1, 1), step_messages(s, 1, 2)
    assert before[0].text().startswith("Establish a durable compaction premise")
    assert after[0].text().startswith("This is an automatically generated checkpoint")
    assert [m.role for m in after] == ["user", "assistant", "tool"]
    req = step_request(s, 1, 2)  # this header carries system and tools inline
    assert req.system[0].text.startswith("You are an AI agent") and len(req.tools) == 15


def test_sidecar_rules_on_the_real_table(shared_real: Path) -> None:
    snaps = shared_real / "deepseek-harness/examples/acp-agent/tests/snapshots"
    report = sidecars(snaps / "subagent-report", child=1)
    assert report.system_path.name == "system-prompt.1.expected.md"
    assert [t["name"] for t in report.tools()][-1] == "write" and len(report.tools()) == 20
    assert sidecars(snaps / "subagent-report").system_path.parent.name == "text-turn"
    # agent-instructions pins its own prompt but shares text-turn's tools
    agent = sidecars(snaps / "agent-instructions")
    assert agent.system_path.parent.name == "agent-instructions" and agent.tools_path.parent.name == "text-turn"
    web = sidecars(shared_real / "deepseek-harness/apps/web/tests/snapshots/fresh-round-trip")
    assert web.system_path is not None and web.tools_path is None


@pytest.mark.parametrize("kind", ["reasoning", "text"])
def test_assistant_parts_keep_their_order(shared_real: Path, kind: str) -> None:
    s = read_session(shared_real / FORK / "session.jsonl")
    parts = step_messages(s, 2, 1)[2].parts
    assert [type(p).__name__ for p in parts] == ["Reasoning", "Text"]
    assert isinstance(parts[0 if kind == "reasoning" else 1], Reasoning if kind == "reasoning" else Text)
