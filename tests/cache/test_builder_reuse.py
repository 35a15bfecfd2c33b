"""The builder builds each request from an earlier one of its
partition (:mod:`fidelity.cache.builder`): it keeps the contexts of the
shared leading elements unless what they read changed, assembles the prompt
from the earlier request's (:func:`fidelity.cache.assemble.generic_assemble`,
:func:`~fidelity.cache.assemble.anthropic_assemble`), and picks that earlier
request among the last few when sessions interleave. Each request must still
equal :func:`fidelity.cache.prompts.cache_prompt`'s: checked here on drawn
sessions whose history is edited mid-way (messages inserted, deleted,
replaced; tools and system changed; breakpoints moved; settings that salt a
level toggled; call ids reused under another name), interleaved two or three
at a time in one partition."""

from __future__ import annotations

import copy
from array import array
from typing import Any

import orjson
import pytest
from hypothesis import given
from hypothesis import strategies as st

from cache.test_builder import ELEMENTS, check
from fidelity import wire
from fidelity.cache import builder
from fidelity.cache.assemble import anthropic_assemble, generic_assemble, generic_request
from fidelity.cache.builder import KEEP
from fidelity.cache.memo import TokenMemo
from fidelity.model import Route
from fidelity.strategies import requests

OPS = ("append", "append", "append", "insert", "delete", "replace", "tools", "system", "marker", "setting",
       "rename", "image")


def _history_key(body: dict[str, Any]) -> str:
    return "input" if isinstance(body.get("input"), list) else "messages"


def _edit(body: dict[str, Any], op: str, pool: list[Any], tools: list[Any], draw: st.DrawFn) -> dict[str, Any]:
    """``body`` with one drawn edit (a new dict: the previous body stays as it was)."""
    body = copy.deepcopy(body)
    key = _history_key(body)
    hist = body.get(key)
    if not isinstance(hist, list):
        return body
    at = draw(st.integers(0, len(hist)))
    if op == "append" and pool:
        hist.append(copy.deepcopy(pool[len(hist) % len(pool)]))
    elif op == "insert" and pool:
        hist.insert(at, copy.deepcopy(draw(st.sampled_from(pool))))
    elif op == "delete" and len(hist) > 1:
        del hist[min(at, len(hist) - 1)]
    elif op == "replace" and pool and hist:
        hist[min(at, len(hist) - 1)] = copy.deepcopy(draw(st.sampled_from(pool)))
    elif op == "tools" and tools:
        kept = draw(st.lists(st.sampled_from(tools), max_size=len(tools), unique_by=lambda t: orjson.dumps(t)))
        body["tools"] = copy.deepcopy(kept)
    elif op == "system":
        if "system" in body:
            body["system"] = draw(st.sampled_from(["", "You are a fork.", [{"type": "text", "text": "S"}]]))
        elif "instructions" in body:
            body["instructions"] = draw(st.sampled_from(["", "Be brief."]))
        elif hist and isinstance(hist[0], dict):
            hist.insert(0, {"role": "system", "content": draw(st.sampled_from(["sys", "other sys"]))})
    elif op == "marker":
        _move_markers(body, hist, draw)
    elif op == "setting":
        name, value = draw(st.sampled_from([("tool_choice", {"type": "any"}), ("tool_choice", {"type": "auto"}),
                                            ("thinking", {"type": "enabled", "budget_tokens": 1024}),
                                            ("cache_control", {"type": "ephemeral"}), ("top_k", 5)]))
        if name in body:
            del body[name]
        else:
            body[name] = value
    elif op == "rename":
        _reuse_call_id(hist, draw)
    elif op == "image" and body.get("messages") is hist and "system" in body:
        hist.append({"role": "user", "content": [
            {"type": "image", "source": {"type": "url", "url": "https://example.com/a.png"}},
            {"type": "text", "text": "what is this"}]})
    return body


def _move_markers(body: dict[str, Any], hist: list[Any], draw: st.DrawFn) -> None:
    """Anthropic's breakpoints moved: every ``cache_control`` dropped, then
    up to two placed on drawn content blocks (the last one's included)."""
    for msg in hist:
        if isinstance(msg, dict) and isinstance(msg.get("content"), list):
            for block in msg["content"]:
                if isinstance(block, dict):
                    block.pop("cache_control", None)
    lists = [m["content"] for m in hist if isinstance(m, dict) and isinstance(m.get("content"), list) and m["content"]]
    for content in ([lists[-1]] if lists else []) + ([draw(st.sampled_from(lists))] if lists else []):
        block = content[draw(st.integers(0, len(content) - 1))]
        if isinstance(block, dict):
            block["cache_control"] = draw(st.sampled_from([{"type": "ephemeral"}, {"type": "ephemeral", "ttl": "1h"}]))


def _reuse_call_id(hist: list[Any], draw: st.DrawFn) -> None:
    """A later assistant message reuses an earlier call id under another
    function name: earlier tool results, kept from the previous request,
    now read that name (OpenAI ``tool_calls`` / Responses ``function_call``)."""
    ids = [c.get("id") for m in hist if isinstance(m, dict) for c in (m.get("tool_calls") or [])
           if isinstance(c, dict)]
    ids += [m.get("call_id") for m in hist if isinstance(m, dict) and m.get("type") == "function_call"]
    ids += [m.get("tool_call_id") for m in hist if isinstance(m, dict) and m.get("role") == "tool"]
    ids = [i for i in ids if isinstance(i, str)]
    if not ids:
        return
    cid = draw(st.sampled_from(ids))
    name = draw(st.sampled_from(["renamed", "other_fn"]))
    if any(isinstance(m, dict) and m.get("type") for m in hist):  # Responses items
        hist.append({"type": "function_call", "call_id": cid, "name": name, "arguments": "{}"})
    else:
        hist.append({"role": "assistant", "content": None,
                     "tool_calls": [{"id": cid, "type": "function", "function": {"name": name, "arguments": "{}"}}]})


@st.composite
def edited_sessions(draw: st.DrawFn, dialect: str, provider: str, model: str) -> list[bytes]:
    """One session's log lines: a drawn request's first message, then drawn
    edits (mostly appends) of the previous request's body."""
    req = draw(requests(route=st.just(Route(provider, model))))
    try:
        base = orjson.loads(wire.get(dialect).render(req))
    except Exception:  # noqa: BLE001 -- a request this dialect cannot render: no session
        return []
    key = _history_key(base)
    pool = list(base.get(key) or [])
    tools = list(base.get("tools") or []) if isinstance(base.get("tools"), list) else []
    if not pool:
        return [orjson.dumps({"provider": dialect, "body": base})]
    body = {**base, key: pool[:1]}
    lines = [orjson.dumps({"provider": dialect, "body": body})]
    for op in draw(st.lists(st.sampled_from(OPS), min_size=1, max_size=8)):
        body = _edit(body, op, pool, tools, draw)
        lines.append(orjson.dumps({"provider": dialect, "body": body}))
    return lines


@st.composite
def interleaved(draw: st.DrawFn) -> tuple[str, list[bytes]]:
    """Two or three edited sessions of one dialect and model, their lines
    interleaved in a drawn order (each session's own order kept)."""
    dialect, provider, model = draw(st.sampled_from(ELEMENTS))
    sessions = [draw(edited_sessions(dialect, provider, model)) for _ in range(draw(st.integers(2, 3)))]
    out: list[bytes] = []
    while any(sessions):
        s = draw(st.sampled_from([s for s in sessions if s]))
        out.append(s.pop(0))
    return dialect, out


@given(interleaved())
def test_interleaved_edited_sessions_equal_cache_prompt(case: tuple[str, list[bytes]]) -> None:
    """200 drawn cases (ci profile), each request of each checked against cache_prompt."""
    _, lines = case
    if lines:
        n, fast = check(lines)
        assert fast == n  # each built element by element


@pytest.mark.parametrize("keep", [1, KEEP])
def test_edits_are_built_from_the_right_parent(keep: int, monkeypatch: pytest.MonkeyPatch) -> None:
    """Three Anthropic sessions interleaved: each request reuses its own
    session's previous turn, so only its new elements are looked up in the
    memo (the per-request work follows the new elements); keeping one
    request (the partition's previous, another session's) looks up the
    whole history. Every request equals cache_prompt's either way."""
    monkeypatch.setattr(builder, "KEEP", keep)

    def turn(s: int, n: int) -> bytes:
        msgs = [{"role": "user" if i % 2 == 0 else "assistant",
                 "content": [{"type": "text", "text": f"session {s} turn {i} " + "word " * 20}]} for i in range(n)]
        msgs[-1]["content"][-1]["cache_control"] = {"type": "ephemeral"}
        body = {"model": "claude-sonnet-4-5", "max_tokens": 10, "system": "shared system " * 30,
                "tools": [{"name": "t", "description": "d", "input_schema": {"type": "object"}}], "messages": msgs}
        return orjson.dumps({"provider": "anthropic-messages", "body": body})

    lines = [turn(s, n) for n in range(1, 12, 2) for s in range(3)]
    memo = TokenMemo()
    n, fast = check(lines, memo)
    assert fast == n == len(lines)
    # a turn adds two messages (two misses when the parent is right) and
    # moves the breakpoint off the one before: that message changed, but the
    # memo keys on it without its marker, so it is a hit (no tokenizer pass)
    assert memo.misses == 3 * (1 + 5 * 2) + 2 + 1  # tools and system once, the params once
    lookups_beyond_new = memo.hits - (len(lines) - 1)  # the params are looked up every request
    moved = 3 * 5  # the message each later turn takes the breakpoint off
    if keep == 1:
        assert lookups_beyond_new > 50 + moved
    else:
        assert lookups_beyond_new <= 4 + moved  # the second and third sessions' tools and system


def _blocks(level: str, n: int, size: int) -> list[tuple[str, array[int], list[tuple[int, Any]]]]:
    return [(level, array("q", range(i * 100, i * 100 + size)), [(size, {"type": "ephemeral"} if i == n - 1 else None)])
            for i in range(n)]


@pytest.mark.parametrize("cut_tool", [False, True])
def test_anthropic_assemble_reuses_only_what_is_the_same(cut_tool: bool) -> None:
    """anthropic_assemble with the previous request's state equals a fresh
    one, whatever the caller claims is shared: a changed
    block, salt or joined request piece stops the reuse there."""
    from fidelity.tokens.framing_estimate import DOC

    tools = _blocks("tools", 2, 5)
    if cut_tool:
        tools[0] = ("tools", array("q", [DOC.id] * 350 + list(range(7))), [(357, None)])
    system = _blocks("system", 2, 4)
    msgs = _blocks("messages", 6, 3)
    params = array("q", [-104, -104, -104, -103, -103])
    obj: dict[str, Any] = {"messages": []}
    first = tools + system + msgs[:4]
    _, state = anthropic_assemble(params, first, [], obj, "claude-sonnet-4-5", 1.0, 0)
    variants = [
        tools + system + msgs[:5],                      # appended
        tools + system + msgs[:2] + msgs[3:6],          # deleted mid-history
        tools + [system[1]] + msgs[:4],                 # system changed
        tools[1:] + system + msgs[:4],                  # first tool changed (its cut)
    ]
    for blocks in variants:
        for same in (0, 3, len(first), 99):
            for members in ([], [("tool_choice", b'{"type":"any"}')], [("speed", b'"fast"')]):
                want = anthropic_assemble(params, blocks, members, obj, "claude-sonnet-4-5", 2.0, 1)[0]
                got, _ = anthropic_assemble(params, blocks, members, obj, "claude-sonnet-4-5", 2.0, 1, (), None,
                                            state, same)
                assert got == want
    with pytest.raises(ValueError):
        anthropic_assemble(params, msgs[:1] + tools, [], obj, "claude-sonnet-4-5", 1.0, 0)


def test_generic_assemble_reuses_only_what_is_the_same() -> None:
    segs = [array("q", range(i * 10, i * 10 + 4)) for i in range(8)]
    kinds = ["params"] + ["message"] * 7
    tail = array("q", [1, 2, 3])
    _, state = generic_assemble(kinds, segs[:6], tail, 1.0, 0)
    for ids, k in ((segs[:7], kinds[:7]), (segs[:3] + segs[4:], kinds[:7]), (segs[:5], ["params"] + ["tools"] * 4),
                   ([array("q"), *segs[1:6]], kinds[:6])):
        for same in (0, 2, 6, 50):
            for marked in (None, [False, True] * 4):
                m = marked[: len(ids)] if marked is not None else None
                want = generic_request(k, ids, tail, 2.0, 1, (), b"", m)
                got, _ = generic_assemble(k, ids, tail, 2.0, 1, (), b"", m, state, same)
                assert got == want


def test_anthropic_corner_bodies_equal_cache_prompt() -> None:
    """Bodies that take the element path's other branches: a message with a
    member the model reads besides its blocks (block ends from a second
    pass), request pieces with no message to join (thinking, no messages),
    thinking and image blocks, ``cache_control`` inside tool arguments,
    Claude Code's billing block, a string system prompt turned into a list."""
    def line(**body: Any) -> bytes:
        return orjson.dumps({"provider": "anthropic-messages",
                             "body": {"model": "claude-sonnet-4-5", "max_tokens": 5, **body}})

    two = [{"type": "text", "text": "first block"}, {"type": "text", "text": "second", "cache_control": {"type": "ephemeral"}}]
    billing = {"type": "text", "text": "x-anthropic-billing-header: cc_version=2.1.30.abc; cc_entrypoint=cli; cch=12345;"}
    lines = [
        line(messages=[{"role": "user", "name": "alice", "content": two}]),
        line(messages=[{"role": "user", "name": "alice", "content": two}, {"role": "assistant", "content": "ok"}]),
        line(thinking={"type": "enabled", "budget_tokens": 2048}, messages=[]),
        line(thinking={"type": "enabled", "budget_tokens": 2048}, messages=[{"role": "user", "content": two}]),
        line(messages=[{"role": "user", "content": two},
                       {"role": "assistant", "content": [{"type": "thinking", "thinking": "hmm", "signature": "s"},
                                                         {"type": "tool_use", "id": "t1", "name": "f",
                                                          "input": {"cache_control": 1, "q": "x"}},
                                                         {"type": "text", "text": "done"}]},
                       {"role": "user", "content": [{"type": "image", "source": {"type": "url", "url": "https://e/a.png"}},
                                                    {"type": "tool_result", "tool_use_id": "t1", "content": "r"}]}]),
        line(system=[billing, {"type": "text", "text": "You are helpful."}], messages=[{"role": "user", "content": two}]),
        line(system=[billing, {"type": "text", "text": "You are helpful."}],
             messages=[{"role": "user", "content": two}, {"role": "assistant", "content": two}]),
        line(system="You are helpful.", messages=[{"role": "user", "content": two}]),
    ]
    n, fast = check(lines)
    assert fast == n == len(lines)


@given(st.lists(st.sampled_from(["word", " ", "\n", "{\"k\":", "12", "ü", "日本", "_x"]), max_size=400).map("".join))
def test_calibrated_stretch_follows_the_documented_rule(text: str) -> None:
    """The calibrated Claude and Gemini ids (a loop for short texts, a
    precomputed pattern for long ones) are o200k's, the j-th id at or above
    the rank followed by floor((j+1)f) - floor(jf) - 1 more (plus m * 2**40)
    (200 drawn texts, ci profile)."""
    import math

    from fidelity import tokens
    from fidelity.tokens.billed import billing_tokenizer

    base = tokens.get("o200k_base").ids(text)
    for name, dialect in (("claude-sonnet-4-5", "anthropic-messages"), ("claude-opus-4-8", "anthropic-messages"),
                          ("gemini-2.5-pro", "gemini")):
        tok = billing_tokenizer(tokens.for_model(name, dialect.split("-")[0]), name)
        f, rank = tok.factor, tok.rank  # type: ignore[attr-defined]
        want = array("q")
        j = 0
        for t in base:
            want.append(t)
            if t >= rank:
                for m in range(1, math.floor((j + 1) * f) - math.floor(j * f)):
                    want.append(t + m * (1 << 40))
                j += 1
        assert tok._scaled(text) == want  # type: ignore[attr-defined]
