"""Codex CLI's subagents, from the captured bytes (``fixtures/harness-matrix/codex-cli-*``):
no npm, no network.

Codex declares its subagent tools in one Responses ``namespace`` tool,
``multi_agent_v1``; the scripted upstream calls ``spawn_agent`` in that namespace
(``fork_context = true`` for the fork kind). What every captured release shows:
the child's request drops exactly that namespace tool, the fifth tool, so the
cache parts at ``/tools/4``; everything ahead of it (four tool definitions) is
kept. A fork child carries the parent's conversation items and then the task; a
spawned child carries the task and not the parent's prompt.
"""

from __future__ import annotations

import orjson
import pytest

from fidelity.harness.capture import Capture, read_captures, read_pair
from fidelity.harness.drive import tool_names
from fidelity.harness.matrix import DEFAULT_FIXTURES

CAPS = [c for c in read_captures(DEFAULT_FIXTURES) if c.harness == "codex-cli"]


def test_three_releases_each_with_both_kinds_are_captured() -> None:
    assert len({c.version for c in CAPS}) >= 3
    assert {(c.kind, c.status) for c in CAPS} == {("fork", "captured"), ("spawn", "captured")}


@pytest.mark.parametrize("cap", CAPS, ids=lambda c: f"{c.version}-{c.kind}")
def test_the_child_drops_the_multi_agent_namespace_and_nothing_else(cap: Capture) -> None:
    parent, child = (orjson.loads(b) for b in read_pair(cap))
    names = tool_names(orjson.dumps(parent))
    assert names.index("multi_agent_v1") == 4 and parent["tools"][4]["type"] == "namespace"
    assert "spawn_agent" in [t["name"] for t in parent["tools"][4]["tools"]]
    assert child["tools"] == parent["tools"][:4] + parent["tools"][5:]
    for key in ("model", "tool_choice", "parallel_tool_calls", "reasoning", "store", "include"):
        assert child[key] == parent[key], key


@pytest.mark.parametrize("cap", CAPS, ids=lambda c: f"{c.version}-{c.kind}")
def test_a_fork_carries_the_conversation_and_a_spawn_does_not(cap: Capture) -> None:
    parent, child = (orjson.loads(b) for b in read_pair(cap))
    text = orjson.dumps(child["input"]).decode()
    assert "FIDELITY-CHILD" in orjson.dumps(child["input"][-1]).decode()
    if cap.kind == "fork":  # the parent's items after the first (a per-agent developer message), then the task
        assert child["input"][1:len(parent["input"])] == parent["input"][1:]
        assert "FIDELITY-FORK" in text
    else:
        assert "FIDELITY-SUBAGENT" not in text


def test_the_namespace_tool_is_billed_and_dropping_it_costs_the_prefix_after_it() -> None:
    """The namespace tool renders as its own tools section (its functions
    inside ``namespace multi_agent_v1``), so it has tokens; a child without
    it keeps only the four tools ahead of it (it was counted as 0 tokens
    once, which made every Codex row read "kept, 0 lost")."""
    from fidelity.diff import compare
    from fidelity.tokens.framing_openai import render_namespace

    cap = next(c for c in CAPS if c.kind == "fork")
    parent_b, child_b = read_pair(cap)
    ns = orjson.loads(parent_b)["tools"][4]
    text = render_namespace(ns)
    assert text.startswith("## multi_agent_v1\n") and "namespace multi_agent_v1 {" in text
    assert "type spawn_agent = (_: {" in text and text.rstrip().endswith("} // namespace multi_agent_v1")
    r = compare(parent_b, child_b, dialect="openai-responses", model="gpt-5.1")
    assert r.cause.kind == "tools_changed" and r.view.pointer.startswith("/tools/4")
    assert r.cache.lost > 1000 and r.cache.predicted_cached < r.tokens.common_prefix + 1
