"""Claude Code's ordinary (non-fork) subagent, captured through `fidelity proxy`
and judged by fidelity.

An ``Agent`` call with ``subagent_type: "general-purpose"`` (no
``CLAUDE_CODE_FORK_SUBAGENT``) starts a child with its own system prompt, its
own tools and a fresh conversation (the prompt as its first user turn). It
shares no conversation with the parent, so the test asserts that fidelity's
verdict matches the bytes: the first divergence it names differs between the
two bodies, the cause is not "identical", and the tokens the child does not
read from the parent's cache are counted, on Anthropic's API and on a
third-party endpoint.
"""

from __future__ import annotations

import orjson
import pytest

from fidelity.diff import compare
from fidelity.proxy.script import parse_script
from harness._drive import CLAUDE_ENV, drive, tool_names

pytestmark = pytest.mark.harness

PROMPT = "FIDELITY-SUBAGENT: ask a general-purpose subagent to count the files in this folder."
ANTHROPIC_API = "https://api.anthropic.com/v1/messages"
SCRIPT = {
    "defaults": {"text": "Done."},
    "rule": [
        {"name": "child", "when": {"last_contains": "FIDELITY-CHILD"}, "reply": {"text": "Subagent finished: 2 files."}},
        {"name": "parent", "when": {"last_contains": "FIDELITY-SUBAGENT", "has_tool": "Agent"}, "times": 1,
         "reply": {"tool_calls": [{"name": "Agent", "arguments": {
             "subagent_type": "general-purpose", "description": "count files",
             "prompt": "FIDELITY-CHILD: count the files in this folder and report the number."}}]}},
    ],
}


def test_claude_code_ordinary_subagent_against_parent(harness_bin, tmp_path):
    claude = harness_bin("claude-code")
    run = drive([str(claude), "-p", PROMPT],
                CLAUDE_ENV,
                parse_script(SCRIPT), tmp_path)
    assert run.returncode == 0, run.output[-3000:]
    parent, child = run.body_of("parent"), run.body_of("child")
    run.snapshot_of(parent), run.snapshot_of(child)

    p_obj, c_obj = orjson.loads(parent), orjson.loads(child)
    assert b"fork-boilerplate" not in child
    assert "FIDELITY-CHILD" in str(c_obj["messages"][0]["content"])
    assert "FIDELITY-SUBAGENT" not in str(c_obj["messages"])
    # what the bytes show (2.1.197): the child drops some of the parent's tools
    # and turns thinking off; fidelity names the first of these in its view
    removed = [t for t in tool_names(parent) if t not in tool_names(child)]
    for name, endpoint in (("third-party", run.proxy_url + "/v1/messages"), ("anthropic", ANTHROPIC_API)):
        result = compare(parent, child, dialect="anthropic-messages", endpoint=endpoint)
        assert result.cause.kind != "identical", name
        if p_obj.get("thinking") != c_obj.get("thinking"):
            # the params segment (the cache key) comes first in the view
            assert result.cause.kind == "params_changed", (name, result.cause)
            assert "thinking changed" in (result.cause.detail or "")
            assert result.view.segment == ("params", 0)
            # another key: the child reads nothing the parent wrote
            assert result.cache.predicted_cached == 0, name
        elif removed:
            assert result.cause.kind == "tools_changed", (name, result.cause)
        # lost = what a child matching the parent would read, less the
        # prediction: computed, never negative, never past the child's prompt
        assert 0 <= result.cache.lost <= result.tokens.child_prompt, (name, result.cache)
        assert result.tokens.child_prompt > 0 and result.tokens.parent_prompt > 0
