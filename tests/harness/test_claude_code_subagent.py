"""Claude Code's ordinary (non-fork) subagent, captured through `fidelity proxy`
and judged by fidelity.

An ``Agent`` call with ``subagent_type: "general-purpose"`` (no
``CLAUDE_CODE_FORK_SUBAGENT``) starts a child with its own system prompt, its
own tools and a fresh conversation (the prompt as its first user turn). It
shares no conversation with the parent, so the test asserts that fidelity's
verdict matches the bytes: the first divergence it names differs between the
two bodies, the cause is the first dropped tool (the thinking change it also
makes invalidates the messages cache only, and the output says so), and the
child loses the parent's whole cached prefix, on Anthropic's API and on a
third-party endpoint.
"""

from __future__ import annotations

import orjson
import pytest

from fidelity import wire
from fidelity.cache.prompts import cache_prompt
from fidelity.diff import compare, compare_with_breaks
from fidelity.harness import load
from fidelity.harness.drive import drive, tool_names
from fidelity.proxy.script import parse_script

pytestmark = pytest.mark.harness

ANTHROPIC_API = "https://api.anthropic.com/v1/messages"
HARNESS = load("claude-code")
KIND = HARNESS.kind("general-purpose")  # `Agent` with subagent_type "general-purpose", no fork env


def test_claude_code_ordinary_subagent_against_parent(harness_bin, tmp_path):
    claude = harness_bin("claude-code")
    assert "CLAUDE_CODE_FORK_SUBAGENT" not in HARNESS.env_for(KIND)
    run = drive(HARNESS.argv_for(claude, KIND), HARNESS.env_for(KIND), parse_script(KIND.script), tmp_path,
                files=dict(HARNESS.files))
    assert run.returncode == 0, run.output[-3000:]
    parent, child = run.body_of("parent"), run.body_of("child")
    run.snapshot_of(parent), run.snapshot_of(child)

    p_obj, c_obj = orjson.loads(parent), orjson.loads(child)
    assert b"fork-boilerplate" not in child
    assert "FIDELITY-CHILD" in str(c_obj["messages"][0]["content"])
    assert "FIDELITY-SUBAGENT" not in str(c_obj["messages"])
    # what the bytes show (2.1.197): the child drops some of the parent's tools
    # and turns thinking off; a thinking change invalidates the messages cache
    # only (Anthropic's table), so the cache parts at the first dropped tool
    removed = [t for t in tool_names(parent) if t not in tool_names(child)]
    first_dropped = next(i for i, (a, b) in enumerate(zip(tool_names(parent), tool_names(child))) if a != b) \
        if removed else None
    for name, endpoint in (("third-party", run.proxy_url + "/v1/messages"), ("anthropic", ANTHROPIC_API)):
        result = compare(parent, child, dialect="anthropic-messages", endpoint=endpoint)
        assert result.cause.kind != "identical", name
        if removed:
            assert result.cause.kind == "tools_changed", (name, result.cause)
            assert result.view.segment is not None and result.view.segment[0] == "tools", name
            assert result.view.segment[1] <= first_dropped, (name, result.view)
        if p_obj.get("thinking") != c_obj.get("thinking"):
            assert "thinking changed" in (result.cause.detail or ""), (name, result.cause)
            assert "invalidates the messages cache only" in (result.cause.detail or "")
        # the child parts from the parent inside the tools, ahead of every
        # breakpoint the parent wrote: it reads nothing, and loses the
        # parent's whole cached prefix (its deepest entry), which it would
        # have read had it kept the parent's tools and system prompt
        entries = cache_prompt(parent, dialect="anthropic-messages", endpoint=endpoint).request.breakpoints
        assert result.cache.predicted_cached == 0, name
        assert result.cache.lost == max(entries), (name, result.cache, entries)
        assert result.tokens.common_prefix < min(entries), name
        assert result.tokens.child_prompt > 0 and result.tokens.parent_prompt > 0
        # every break, not only the first: each lane of the cache view the child
        # changes is listed, in cache order, and the fully fixed child reads again
        full = compare_with_breaks(parent, child, dialect="anthropic-messages", endpoint=endpoint)
        assert full.breaks, name
        kinds = [b.kind for b in full.breaks]
        segs = {side: wire.cache_view_at(wire.get("anthropic-messages"), body, endpoint)
                for side, body in (("parent", parent), ("child", child))}
        for kind, cause in (("tools", "tools_changed"), ("system", "system_changed"), ("message", "messages_rewritten")):
            lanes = [[s.data for s in segs[side] if s.kind == kind] for side in ("parent", "child")]
            if lanes[0] != lanes[1] and not (kind == "message" and lanes[1][: len(lanes[0])] == lanes[0]):
                assert cause in kinds, (name, kind, kinds)
        if removed:
            assert any(b.detail.startswith("tool removed: ") for b in full.breaks), (name, kinds)
        offsets = [b.offset for b in full.breaks]
        assert offsets == sorted(offsets), name
        assert full.breaks[-1].kept is not None and full.breaks[-1].kept > result.cache.predicted_cached, name
