"""`fidelity diff`'s lost tokens on Anthropic: the invalidation table and
breakpoints mapped by position.

* A ``tool_choice``, ``thinking`` or ``output_config`` change invalidates the
  messages cache only; ``speed`` the system and messages caches (Anthropic's
  table "What invalidates the cache",
  https://docs.anthropic.com/en/docs/build-with-claude/prompt-caching). The
  differ follows the cache simulator's rule (one table,
  :mod:`fidelity.cache.invalidation`): the child still reads the parent's
  tools and system entries, and the output says what the change invalidates.
* A parent breakpoint survives when the child's prompt starts with the
  parent's tokens up to it (the first divergence), whatever the number of
  tools before it; a lost one is counted whatever segment index it had.
"""

from __future__ import annotations

import json

import orjson
from hypothesis import given
from hypothesis import strategies as st

from fidelity.cache import AnthropicCache, PromptTokens, common_prefix
from fidelity.cache.prompts import cache_prompt
from fidelity.cache.simulator import simulated
from fidelity.diff import compare
from fidelity.diff.lost import lost_tokens, parent_entries, surviving_entries

MODEL = "claude-sonnet-4-5"
EPHEMERAL = {"type": "ephemeral"}


def _tool(i: int, words: int = 120) -> dict:
    text = " ".join(f"step{i}_{k} reads the file and reports" for k in range(words // 6))
    return {"name": f"tool_{i}", "description": text,
            "input_schema": {"type": "object", "properties": {"path": {"type": "string"}}}}


def _body(*, tools: int = 6, system_words: int = 400, turns: int = 6, tool_choice: object = None,
          thinking: object = None, speed: str | None = None, tools_mark: bool = False,
          first_tool: int = 0) -> dict:
    body: dict = {"model": MODEL, "max_tokens": 256}
    ts = [_tool(i) for i in range(first_tool, first_tool + tools)]
    if tools_mark and ts:
        ts[-1] = {**ts[-1], "cache_control": EPHEMERAL}
    body["tools"] = ts
    body["system"] = [{"type": "text", "text": " ".join(f"rule {k}: be exact." for k in range(system_words // 4)),
                       "cache_control": EPHEMERAL}]
    msgs = []
    for t in range(turns):
        msgs.append({"role": "user", "content": [{"type": "text", "text": f"question {t}: " + "why? " * 80}]})
        msgs.append({"role": "assistant", "content": [{"type": "text", "text": f"answer {t}: " + "because. " * 80}]})
    msgs.append({"role": "user", "content": [{"type": "text", "text": "go on", "cache_control": EPHEMERAL}]})
    body["messages"] = msgs
    for key, value in (("tool_choice", tool_choice), ("thinking", thinking), ("speed", speed)):
        if value is not None:
            body[key] = value
    return body


def _bytes(obj: dict) -> bytes:
    return orjson.dumps(obj)


def _entries(body: bytes) -> tuple[int, ...]:
    """Token offsets of the body's breakpoints in the simulator's prompt."""
    return cache_prompt(body, dialect="anthropic-messages").request.breakpoints


# -------------------------------------------------------------- invalidation table


def test_tool_choice_change_keeps_tools_and_system_reads():
    parent = _bytes(_body())
    child = _bytes(_body(tool_choice={"type": "any"}))
    system_end, messages_end = _entries(parent)
    r = compare(parent, child, dialect="anthropic-messages")
    assert r.cause.kind == "params_changed"
    assert r.cause.detail is not None
    assert r.cause.detail.startswith("tool_choice changed")
    assert "invalidates the messages cache only; the tools and system caches stay" in r.cause.detail
    # the system entry is read; the messages entry is what the change lost
    assert r.cache.predicted_cached == system_end
    assert r.cache.lost == messages_end - system_end
    assert r.tokens.common_prefix >= system_end


def test_thinking_change_keeps_tools_and_system_reads():
    parent = _bytes(_body(thinking={"type": "enabled", "budget_tokens": 2048}))
    child = _bytes(_body(thinking={"type": "disabled"}))
    system_end, messages_end = _entries(parent)
    r = compare(parent, child, dialect="anthropic-messages")
    assert "thinking changed" in (r.cause.detail or "")
    assert "messages cache only" in (r.cause.detail or "")
    assert (r.cache.predicted_cached, r.cache.lost) == (system_end, messages_end - system_end)


def test_thinking_change_with_a_tool_removed_names_the_tools_first():
    """The Claude Code subagent shape: thinking off and a tool dropped. The
    thinking change keeps the tools cache, so the cache parts at the tool;
    the output names it and says what the thinking change invalidates."""
    parent = _bytes(_body(thinking={"type": "adaptive"}))
    obj = _body(thinking={"type": "disabled"})
    del obj["tools"][3]
    r = compare(parent, _bytes(obj), dialect="anthropic-messages")
    assert r.cause.kind == "tools_changed"
    assert r.view.segment == ("tools", 3) and r.view.pointer is not None
    assert r.view.pointer.startswith("/tools/3")
    assert r.cause.detail is not None and r.cause.detail.startswith("tool removed: tool_3; also thinking changed")
    assert r.cause.detail.endswith("(invalidates the messages cache only; the tools and system caches stay)")
    assert r.cache.predicted_cached == 0
    assert r.cache.lost == max(_entries(parent))


def test_speed_change_keeps_only_the_tools_entry():
    parent = _bytes(_body(tools_mark=True))
    child = _bytes(_body(tools_mark=True, speed="fast"))
    tools_end, _, messages_end = _entries(parent)
    r = compare(parent, child, dialect="anthropic-messages")
    assert "invalidates the system and messages caches; the tools cache stays" in (r.cause.detail or "")
    assert (r.cache.predicted_cached, r.cache.lost) == (tools_end, messages_end - tools_end)


def test_model_change_still_loses_everything():
    parent = _bytes(_body())
    child = _bytes({**_body(), "model": "claude-opus-4-5"})
    r = compare(parent, child, dialect="anthropic-messages", model=MODEL)
    assert r.cache.predicted_cached == 0
    assert r.cache.lost == max(_entries(parent))
    assert "invalidates" not in (r.cause.detail or "")


def test_simulator_and_differ_agree_on_a_tool_choice_change():
    from fidelity.cache.simulator import Simulator

    parent = _bytes(_body())
    child = _bytes(_body(tool_choice={"type": "auto"}))
    sim = Simulator("anthropic", MODEL)
    sim.feed(cache_prompt(parent, dialect="anthropic-messages", time=0.0).request)
    pred = sim.predict(cache_prompt(child, dialect="anthropic-messages", time=1.0).request)
    r = compare(parent, child, dialect="anthropic-messages")
    assert pred.cache_read == r.cache.predicted_cached > 0


def test_simulator_keeps_tools_and_system_when_tool_choice_is_forced():
    """With tools, the tool-use system prompt's estimated count depends on
    tool_choice (497 / 597 tokens on Claude 4.5); the part that varies sits
    ahead of the messages, so auto -> any still reads the system entry."""
    from fidelity.cache.simulator import Simulator
    from fidelity.tokens.framing_estimate import anthropic_tool_prompt

    a = cache_prompt(_bytes(_body()), dialect="anthropic-messages", time=0.0).request
    b = cache_prompt(_bytes(_body(tool_choice={"type": "any"})), dialect="anthropic-messages", time=1.0).request
    auto, forced = (anthropic_tool_prompt(MODEL, c) for c in (None, {"type": "any"}))
    assert auto != forced
    assert len(a.tokens) - len(b.tokens) == auto - forced  # the billed count still follows the choice
    sim = Simulator("anthropic", MODEL)
    sim.feed(a)
    assert sim.predict(b).cache_read == a.breakpoints[0] == b.breakpoints[0]


def test_diff_cli_says_what_a_tool_choice_change_invalidates(tmp_path, capsys):
    from fidelity.cli import main

    (tmp_path / "p.json").write_bytes(_bytes(_body()))
    (tmp_path / "c.json").write_bytes(_bytes(_body(tool_choice={"type": "any"})))
    main(["diff", str(tmp_path / "p.json"), str(tmp_path / "c.json"), "--json"])
    out = json.loads(capsys.readouterr().out)
    assert "invalidates the messages cache only" in json.dumps(out)


# -------------------------------------------------------------- mapping by position


def test_fewer_tools_in_the_child_still_counts_the_parent_entries_lost():
    """Old mapping by segment index: the parent's breakpoints sit at segment
    indices the child (1 tool instead of 6) does not have, so nothing was
    counted lost. By position: the child diverges at its first tool, so both
    parent entries are lost; it marks a message, so it would have reached them."""
    parent = _bytes(_body(tools=6))
    child = _bytes(_body(tools=1, first_tool=7))
    r = compare(parent, child, dialect="anthropic-messages")
    assert r.cache.predicted_cached == 0
    assert r.cache.lost == max(_entries(parent))


def test_unchanged_prefix_before_a_breakpoint_is_not_lost():
    """The child keeps tools and system and rewrites an early message: the
    system entry is read, only what lies past it is lost."""
    base = _body()
    parent = _bytes(base)
    edited = json.loads(json.dumps(base))
    edited["messages"][2]["content"][0]["text"] = "question 1: edited"
    child = _bytes(edited)
    system_end, messages_end = _entries(parent)
    r = compare(parent, child, dialect="anthropic-messages")
    assert r.cache.predicted_cached == system_end
    assert r.cache.lost == messages_end - system_end


def test_child_that_marks_nothing_loses_nothing():
    parent = _bytes(_body())
    obj = _body(tools=2)
    obj["system"] = [{"type": "text", "text": "other"}]
    obj["messages"][-1]["content"][0].pop("cache_control")
    r = compare(parent, _bytes(obj), dialect="anthropic-messages")
    assert (r.cache.predicted_cached, r.cache.lost) == (0, 0)


# -------------------------------------------------------------- properties


@st.composite
def parent_child(draw: st.DrawFn) -> tuple[PromptTokens, PromptTokens, int]:
    """A parent prompt with breakpoints, and a child that keeps its first
    ``keep`` tokens, then goes its own way, with its own breakpoints.

    >>> parent_child().example()  # doctest: +SKIP
    """
    n = draw(st.integers(1, 6000))
    parent_tokens = list(range(n))
    p_bps = draw(st.lists(st.integers(1, n), max_size=4, unique=True))
    keep = draw(st.integers(0, n))
    tail = draw(st.integers(0, 6000))
    child_tokens = parent_tokens[:keep] + [n + 10 + k for k in range(tail)]
    m = len(child_tokens)
    c_bps = draw(st.lists(st.integers(1, m), max_size=4, unique=True)) if m else []
    blocks = set(draw(st.lists(st.integers(1, m), max_size=30))) if m else set()
    if draw(st.booleans()):  # the child keeps the parent's block ends inside the shared part
        blocks |= {b for b in p_bps if b <= min(keep, m)}
    blocks = sorted(blocks | set(c_bps))
    parent = PromptTokens(parent_tokens, 0.0, tuple(sorted(p_bps)))
    child = PromptTokens(child_tokens, 1.0, tuple(sorted(c_bps)), blocks=tuple(blocks))
    return parent, child, keep


@given(parent_child(), st.sampled_from([1024, 2048, 1]))
def test_lost_never_exceeds_the_parent_cached_prefix(case, minimum):
    parent, child, _ = case
    cm = AnthropicCache(minimum=minimum)
    read = simulated(cm, [parent], child).cache_read or 0
    lost = lost_tokens(cm, parent, child, read)
    entries = parent_entries(cm, parent)
    cached_prefix = max(entries, default=0)
    assert 0 <= lost <= cached_prefix
    assert read + lost <= max(cached_prefix, read)
    shared = common_prefix(parent.tokens, child.tokens)
    # an unchanged prefix before a breakpoint (same tokens, and the child's
    # own block ends there too) is never counted lost
    cuts = set(child.blocks) | set(child.breakpoints)
    kept = [b for b in entries if b <= shared and b in cuts]
    assert kept == surviving_entries(entries, child, shared)
    for b in kept:
        assert lost <= cached_prefix - b
    if kept and max(kept) == cached_prefix:
        assert lost == 0


@given(st.integers(1, 5), st.integers(0, 5), st.sampled_from(["tools", "system", "message", "tool_choice"]))
def test_lost_on_bodies_stays_within_the_parent_cached_prefix(p_tools, c_tools, change):
    """On whole bodies: lost never exceeds the parent's cached prefix, and a
    child that keeps the parent's bytes through a breakpoint never counts
    that prefix lost."""
    base = _body(tools=p_tools, turns=2, tools_mark=True)
    obj = json.loads(json.dumps(base))
    if change == "tools":
        obj["tools"] = [_tool(i + 20) for i in range(c_tools)]
        if obj["tools"]:
            obj["tools"][-1]["cache_control"] = EPHEMERAL
    elif change == "system":
        obj["system"][0]["text"] += " edited"
    elif change == "message":
        obj["messages"][0]["content"][0]["text"] = f"edited {c_tools}"
    else:
        obj["tool_choice"] = {"type": "any"}
    parent, child = _bytes(base), _bytes(obj)
    r = compare(parent, child, dialect="anthropic-messages")
    p_req = cache_prompt(parent, dialect="anthropic-messages").request
    c_req = cache_prompt(child, dialect="anthropic-messages").request
    entries = [b for b in p_req.breakpoints if b >= AnthropicCache(MODEL).minimum]
    cached_prefix = max(entries, default=0)
    assert 0 <= r.cache.lost <= cached_prefix
    shared = common_prefix(p_req.tokens, c_req.tokens)
    kept = [b for b in entries if b <= shared and b in set(c_req.blocks)]
    if kept:
        assert r.cache.lost <= cached_prefix - max(kept)
        assert r.cache.predicted_cached >= max(kept)


def test_docs_examples_run():
    import doctest
    from pathlib import Path

    doc = Path(__file__).resolve().parents[2] / "docs" / "diff-lost.md"
    result = doctest.testfile(str(doc), module_relative=False, optionflags=doctest.ELLIPSIS)
    assert result.attempted >= 10
    assert result.failed == 0
