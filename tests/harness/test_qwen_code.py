"""Qwen Code's fork, captured through `fidelity proxy` and judged by fidelity.

Qwen Code's ``agent`` tool with ``subagent_type: "fork"`` starts a child
that inherits the parent's conversation. The test asserts that fidelity
reports what the bytes show: whichever tools the child's request drops,
fidelity names them as the cause and counts the tokens lost (0.24.4 drops
``agent``, ``get_goal``, ``list_agents``, ``update_goal``).
"""

from __future__ import annotations

import orjson
import pytest

from fidelity.diff import breaks_of, compare
from fidelity.harness import load
from fidelity.harness.drive import DUMMY_KEY, drive, tool_names
from fidelity.jsonbytes import value_spans
from fidelity.proxy.script import parse_script
from harness._record import record

pytestmark = pytest.mark.harness

VERSION = "0.24.4"
HARNESS = load("qwen-code")
KIND = HARNESS.kind("fork")  # the descriptor's script: `agent` with subagent_type "fork"
PROMPT = KIND.prompt


def test_qwen_code_fork_child_against_parent(harness_bin, tmp_path):
    qwen = harness_bin("qwen-code")
    run = drive(HARNESS.argv_for(qwen, KIND), HARNESS.env_for(KIND), parse_script(KIND.script), tmp_path,
                files=dict(HARNESS.files))
    assert run.returncode == 0, run.output[-3000:]
    parent, child = run.body_of("parent"), run.body_of("child")

    # byte-identical: what the upstream received is what the proxy wrote
    p_snap, c_snap = run.snapshot_of(parent), run.snapshot_of(child)
    assert run.key_forwarded() and DUMMY_KEY not in parent.decode(), "the key was not forwarded"

    # the child is a fork: the placeholder history of the fork design
    assert b"Fork started" in child

    dialect = _provider(p_snap)
    result = compare(parent, child, dialect=dialect)
    removed = [t for t in tool_names(parent) if t not in tool_names(child)]
    if removed:  # a finding about the harness, reported as such
        assert result.cause.kind == "tools_changed"
        assert "tool removed: " + ", ".join(sorted(removed)) in (result.cause.detail or "")
        assert result.view.pointer == "/tools/0/function/name"
        assert result.cache.lost > 0
        # the proxy's own line for the child says the same
        child_line = next(line for line in run.lines if line.startswith(f"#{c_snap.name[:4]} "))
        assert "tool removed" in child_line and "lost" in child_line
    else:
        assert result.cache.lost == 0
    _every_rewrite_against_the_next_turn(run, parent, child, dialect, removed)
    record(run, "qwen-code", VERSION, parent, child,
           {"package": "@qwen-code/qwen-code", "dialect": dialect, "prompt": PROMPT,
            "command": "qwen -p PROMPT --yolo", "removed_tools": removed})


def _every_rewrite_against_the_next_turn(run, parent, child, dialect, removed):
    """Issue #30: against the parent's next request (its ``agent`` call
    answered), the child's fix list names the dropped tools, the call's
    rewritten ``arguments`` and the changed tool message that answers it,
    and the fully fixed child (those three put back by hand) keeps what the
    last break says."""
    n_parent = len(orjson.loads(parent)["messages"])
    nxt = next(r.body for r in run.received if r.rule not in ("parent", "child")
               and len(orjson.loads(r.body)["messages"]) == n_parent + 2)
    assert [m["role"] for m in orjson.loads(nxt)["messages"][n_parent:]] == ["assistant", "tool"]
    found = breaks_of(nxt, child, dialect=dialect)
    assert [b.kind for b in found] == ["tools_changed", "messages_rewritten", "messages_rewritten"], found
    assert found[0].detail == "tool removed: " + ", ".join(sorted(removed))
    assert found[1].pointer == "/messages/2/tool_calls/0/function/arguments"
    assert found[1].detail.startswith("tool-call arguments rewritten")
    assert found[2].pointer.startswith("/messages/3/content")
    fixed = _splice(child, "/tools", _at(nxt, "/tools"))
    for i in (2, 3):
        fixed = _splice(fixed, f"/messages/{i}", _at(nxt, f"/messages/{i}"))
    by_hand = compare(nxt, fixed, dialect=dialect)
    assert by_hand.cause.kind == "appended_only"
    kept = [b.kept for b in found]
    assert kept == sorted(kept) and kept[-1] == by_hand.cache.predicted_cached
    assert kept[-1] > compare(nxt, child, dialect=dialect).cache.predicted_cached


def _at(body, ptr):
    a, b = value_spans(body, [ptr])[ptr]
    return body[a:b]


def _splice(body, ptr, new):
    a, b = value_spans(body, [ptr])[ptr]
    return body[:a] + new + body[b:]


def _provider(path):
    from fidelity.proxy import _store

    return _store.snapshot.read(path).provider
