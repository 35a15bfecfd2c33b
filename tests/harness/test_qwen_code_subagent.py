"""Qwen Code's ordinary (non-fork) subagent, captured through `fidelity proxy`
and judged by fidelity.

The ``agent`` tool with ``subagent_type: "general-purpose"`` starts a child
with its own system prompt, its own tools and a fresh conversation (the
prompt as its only user turn). It shares no conversation with the parent, so
the test asserts that fidelity's verdict matches the bytes: the first
divergence it names is where the two bodies first differ, the cause is not
"identical", and the tokens the child does not read from the parent's cache
are counted.
"""

from __future__ import annotations

import orjson
import pytest

from fidelity.diff import compare
from fidelity.harness import load
from fidelity.harness.drive import drive
from fidelity.proxy import _store
from fidelity.proxy.script import parse_script

pytestmark = pytest.mark.harness

HARNESS = load("qwen-code")
KIND = HARNESS.kind("general-purpose")  # `agent` with subagent_type "general-purpose"


def test_qwen_code_ordinary_subagent_against_parent(harness_bin, tmp_path):
    qwen = harness_bin("qwen-code")
    run = drive(HARNESS.argv_for(qwen, KIND), HARNESS.env_for(KIND), parse_script(KIND.script), tmp_path,
                files=dict(HARNESS.files))
    assert run.returncode == 0, run.output[-3000:]
    parent, child = run.body_of("parent"), run.body_of("child")
    p_snap, c_snap = run.snapshot_of(parent), run.snapshot_of(child)

    p_obj, c_obj = orjson.loads(parent), orjson.loads(child)
    # an ordinary subagent: a fresh conversation, not the fork placeholder history
    assert b"Fork started" not in child
    c_users = [m for m in c_obj["messages"] if m["role"] == "user"]
    assert len(c_users) == 1 and "FIDELITY-CHILD" in str(c_users[0]["content"])
    assert "FIDELITY-SUBAGENT" not in str(c_obj["messages"])

    dialect = _store.snapshot.read(p_snap).provider
    result = compare(parent, child, dialect=dialect)
    # fidelity names the first divergence where the bodies first differ: the
    # subagent's own system prompt in messages[0]
    assert result.cause.kind == "system_changed", result.cause
    assert result.view.segment == ("system", 0) and result.view.pointer == "/messages/0/content"
    assert p_obj["messages"][0]["role"] == c_obj["messages"][0]["role"] == "system"
    assert p_obj["messages"][0]["content"] != c_obj["messages"][0]["content"]
    # a fresh conversation reads nothing of the parent's cache, and the tokens a
    # matching child would have read are counted as lost
    assert result.cache.predicted_cached == 0
    assert 0 < result.cache.lost <= result.tokens.child_prompt, result.cache
    # the proxy, which links a request to the earlier one it extends, finds
    # none for the child: a fresh conversation is a root, predicted 0
    child_line = next(line for line in run.lines if line.startswith(f"#{c_snap.name[:4]} "))
    assert "(root)" in child_line and "cached predicted 0 " in child_line, child_line
