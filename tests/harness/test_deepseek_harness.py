"""The seeds' test: DeepSeek Harness's real fork child against the child that
fidelity's reference builder (``completed-turn``) makes from the same parent.

The bytes are fixtures: ``fixtures/harness-matrix/deepseek-harness-0.1.0-rc.8/fork``,
captured by ``fidelity harness matrix`` (``dsh --profile headless`` from npm, behind
``fidelity proxy``, its ``subagent_fork`` tool called by the scripted upstream). No
npm, no network here.

What they show (docs/harness.md, "DeepSeek Harness against the reference
builder"): in a one-task headless run the parent's first turn is still open when
it forks, so the completed-turn seed is empty; DSH's child keeps the parent's
system prompt, tools and parameters byte for byte and sends the directive as its
first user message, as the reference child does. The two differ only after
that: DSH appends its runtime-context message (DSH file policy, approval policy,
workspace) behind the directive, a message it adds before every model step and
not part of the seed. The reference child is a byte prefix of DSH's child, up to
the reference's closing ``]``.
"""

from __future__ import annotations

from pathlib import Path

import orjson
import pytest

from fidelity import wire
from fidelity.bytediff import first_divergence
from fidelity.diff import compare
from fidelity.fork import fork_request
from fidelity.harness import load
from fidelity.harness.capture import read_captures, read_pair
from fidelity.harness.judge import VERDICTS
from fidelity.harness.matrix import DEFAULT_FIXTURES
from fidelity.model import Message, Request, Route, SystemBlock, Text
from fidelity.wire.evidence import parse_body

FOLDER = DEFAULT_FIXTURES / "deepseek-harness-0.1.0-rc.8" / "fork"


def _directive() -> str:
    """The task the scripted upstream had the parent give ``subagent_fork``."""
    kind = load("deepseek-harness").kind("fork")
    rule = next(r for r in kind.script["rule"] if r["name"] == "parent")
    return str(rule["reply"]["tool_calls"][0]["arguments"]["prompt"])


@pytest.fixture(scope="module")
def pair() -> tuple[bytes, bytes]:
    cap = next(c for c in read_captures(DEFAULT_FIXTURES) if c.folder == FOLDER)
    assert cap.status == "captured", cap.reason
    return read_pair(cap)


@pytest.fixture(scope="module")
def reference(pair: tuple[bytes, bytes]) -> bytes:
    parent_bytes, _ = pair
    dialect = wire.get("deepseek")
    parent = parse_body(dialect, parent_bytes, None)
    assert dialect.render(parent) == parent_bytes  # the parsed parent re-renders byte for byte
    return dialect.render(fork_request(parent, "completed-turn", _directive()))


def test_the_real_child_is_the_reference_child_then_the_runtime_context(pair: tuple[bytes, bytes],
                                                                       reference: bytes) -> None:
    parent_bytes, child_bytes = pair
    ref, real = orjson.loads(reference), orjson.loads(child_bytes)
    # the head: system prompt (a leading system message), tools and parameters, byte for byte
    assert real["messages"][0] == ref["messages"][0] == orjson.loads(parent_bytes)["messages"][0]
    assert {k: v for k, v in real.items() if k != "messages"} == {k: v for k, v in ref.items() if k != "messages"}
    # an empty seed (the parent's only turn is in flight): the directive is the first user message
    assert real["messages"][1] == ref["messages"][1] == {"role": "user", "content": _directive()}
    assert len(ref["messages"]) == 2 and len(real["messages"]) == 3
    assert real["messages"][2]["role"] == "user"
    assert real["messages"][2]["content"].startswith("Current runtime context.")


def test_where_they_part_by_fidelity_diff(reference: bytes, pair: tuple[bytes, bytes]) -> None:
    """``fidelity diff`` reference -> real child: the first divergent byte is the
    reference's closing ``]`` after the directive; DSH appends one message there,
    which costs no cached token on DeepSeek."""
    _, child_bytes = pair
    at = first_divergence(reference, child_bytes)
    assert at is not None and reference[:at] == child_bytes[:at]
    assert reference[at:at + 10] == b'],"stream"' and child_bytes[at:at + 17] == b',{"role":"user","'
    r = compare(reference, child_bytes, dialect="deepseek", model="deepseek-chat")
    assert r.raw.first_divergent_byte == at
    assert (r.view.segment, r.view.pointer, r.view.raw_pointer) == (("message", 1), "/messages/2", "/messages")
    assert (r.cause.kind, r.cause.detail) == ("appended_only", "child appends 1 segment(s)")
    assert r.cache.lost == 0 and r.cache.predicted_cached > 0


def test_a_leading_system_message_is_head_when_no_turn_has_completed() -> None:
    """The builder's rule on a system prompt sent as messages (how DSH writes it):
    kept, while the in-flight turn is dropped. Before this rule the reference child
    lost its system prompt and parted from DSH's at ``/messages/0``."""
    parent = Request(Route("deepseek", "deepseek-v4-flash"), messages=(
        Message("system", (Text("You are DSH."),)), Message("user", (Text("fork one"),))))
    child = fork_request(parent, "completed-turn", "go")
    assert [(m.role, m.text()) for m in child.messages] == [("system", "You are DSH."), ("user", "go")]
    blocks = Request(Route("deepseek", "deepseek-v4-flash"), system=(SystemBlock("You are DSH."),),
                     messages=(Message("user", (Text("fork one"),)),))
    assert fork_request(blocks, "completed-turn", "go").messages == (Message("user", (Text("go"),)),)


def test_the_matrix_rows_for_dsh_come_from_these_bytes() -> None:
    rows = [r for r in orjson.loads((Path(__file__).resolve().parents[2] / "reports" / "harness-matrix.json")
                                    .read_bytes())["rows"] if r["harness"] == "deepseek-harness"]
    judged = [r for r in rows if r["verdict"] in VERDICTS]
    assert {r["release"] for r in judged} == {"0.1.0-rc.8"}
    for r in judged:  # the child's directive replaces the parent's prompt: the first message after the system
        assert (r["segment"], r["pointer"], r["cause"]) == ("messages[1]", "/messages/1/content", "messages_rewritten")
    assert all(r["note"].startswith("installing @deepseek-ai/dsh@") for r in rows if r["verdict"] == "not run")
