"""Claude Code's fork (``CLAUDE_CODE_FORK_SUBAGENT=1``, an ``Agent`` call with
``subagent_type: "fork"``), captured through `fidelity proxy` and judged for
Anthropic's API and for an Anthropic-compatible third-party endpoint.

What the bytes show (2.1.197): the child keeps every tool and the parent's
history, adds the placeholder ``tool_result`` and a ``<fork-boilerplate>``
directive, and appends `` cc_is_subagent=true;`` to the billing block in
``system[0]``. Anthropic's API does not key its cache on that block, a
third-party prefix cache does (see
:func:`fidelity.wire.anthropic_messages.billing_block_keyed`), so the same
pair is a near-full hit on one and a miss from ``system[0]`` on the other;
both verdicts together account for what a matching child would read.
"""

from __future__ import annotations

import orjson
import pytest

from fidelity.diff import compare
from fidelity.harness import load
from fidelity.harness.drive import drive, tool_names
from fidelity.proxy.script import parse_script
from harness._record import record

pytestmark = pytest.mark.harness

VERSION = "2.1.197"
ANTHROPIC_API = "https://api.anthropic.com/v1/messages"
HARNESS = load("claude-code")
KIND = HARNESS.kind("fork")  # CLAUDE_CODE_FORK_SUBAGENT=1, `Agent` with subagent_type "fork"
PROMPT = KIND.prompt


def test_claude_code_fork_child_against_parent(harness_bin, tmp_path):
    claude = harness_bin("claude-code")
    run = drive(HARNESS.argv_for(claude, KIND), HARNESS.env_for(KIND), parse_script(KIND.script), tmp_path,
                files=dict(HARNESS.files))
    assert run.returncode == 0, run.output[-3000:]
    assert HARNESS.env_for(KIND)["CLAUDE_CODE_FORK_SUBAGENT"] == "1"
    parent, child = run.body_of("parent"), run.body_of("child")
    run.snapshot_of(parent), run.snapshot_of(child)

    p_obj, c_obj = orjson.loads(parent), orjson.loads(child)
    assert tool_names(child) == tool_names(parent)  # the fork keeps every tool
    assert b"fork-boilerplate" in child
    p_billing, c_billing = p_obj["system"][0]["text"], c_obj["system"][0]["text"]
    assert p_billing.startswith("x-anthropic-billing-header:")

    third_party = run.proxy_url + "/v1/messages"
    tp = compare(parent, child, dialect="anthropic-messages", endpoint=third_party)
    first = compare(parent, child, dialect="anthropic-messages", endpoint=ANTHROPIC_API)
    if c_billing != p_billing:
        # third-party prefix cache: the block is prompt text, the child misses from system[0]
        assert tp.view.segment == ("system", 0) and tp.view.pointer == "/system/0/text"
        assert tp.cache.predicted_cached == 0 and tp.cache.lost > 0
        # Anthropic's API: the block is not keyed, the child reads through the parent's breakpoints
        assert first.view.segment != ("system", 0)
        assert first.cache.predicted_cached > 0
    # predicted + lost: what a matching child reads, on either endpoint (they
    # differ by the billing block's own tokens, in the view on one only)
    covered_tp = tp.cache.predicted_cached + tp.cache.lost
    covered_first = first.cache.predicted_cached + first.cache.lost
    assert covered_tp > 0 and abs(covered_tp - covered_first) <= 64, (covered_tp, covered_first)
    record(run, "claude-code", VERSION, parent, child,
           {"package": "@anthropic-ai/claude-code", "dialect": "anthropic-messages", "prompt": PROMPT,
            "command": "claude -p PROMPT", "env": {"CLAUDE_CODE_FORK_SUBAGENT": "1",
                                                   "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1"},
            "billing_block_parent": p_billing, "billing_block_child": c_billing})
