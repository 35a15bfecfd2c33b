"""Every break of a child, not only the first (`fidelity.diff.breaks`).

Properties: a child made from a parent by k independent edits in distinct
segments has exactly k breaks, in cache order; each break's "kept if fixed"
is what `compare` reports for the child with that edit and the ones before
it undone (built here, independently of the differ's own rebuild); an
append-only child has none. The real harness fixtures (Qwen Code 0.24.4's
fork, Claude Code 2.1.197's fork) are listed break by break.
"""

from __future__ import annotations

import json
from pathlib import Path

import orjson
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from fidelity import wire
from fidelity.capture import snapshot
from fidelity.diff import breaks_of, compare
from fidelity.jsonbytes import element_spans, value_spans

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures" / "harness"
QWEN = FIXTURES / "qwen-code-0.24.4"
CLAUDE = FIXTURES / "claude-code-2.1.197"

_WORDS = ["cache", "prefix", "token", "agent", "fork", "child", "parent", "tool", "schema", "byte", "model",
          "reply", "request", "segment", "history", "system", "message", "price", "budget", "window"]


def _text(seed: int, words: int) -> str:
    return " ".join(_WORDS[(seed * 7 + i * 13 + i * i) % len(_WORDS)] for i in range(words))


def _parent(n_tools: int, n_msgs: int) -> dict:
    tools = [{"type": "function", "function": {"name": f"tool_{i}", "description": _text(i, 40),
                                               "parameters": {"type": "object", "properties": {}}}}
             for i in range(n_tools)]
    msgs = [{"role": "system", "content": _text(99, 1200)}]
    msgs += [{"role": "user" if i % 2 == 0 else "assistant", "content": _text(200 + i, 150)} for i in range(n_msgs)]
    return {"model": "gpt-4o", "messages": msgs, "tools": tools}


def _make(parent: dict, edits: list[tuple[str, int]], extra: bool) -> dict:
    """The parent with ``edits`` applied: ``("tool", i)`` edits tool i's
    description, ``("drop", i)`` removes tool i, ``("message", i)`` edits
    message i (0 is the system prompt), ``("insert", i)`` puts a message
    before message i; ``extra``: a reply and a turn appended."""
    on = set(edits)
    tools = []
    for i, t in enumerate(parent["tools"]):
        if ("drop", i) in on:
            continue
        t = json.loads(json.dumps(t))
        if ("tool", i) in on:
            t["function"]["description"] += " edited"
        tools.append(t)
    msgs = []
    for i, m in enumerate(parent["messages"]):
        if ("insert", i) in on:
            msgs.append({"role": "user", "content": f"a stray reminder {i}"})
        m = dict(m)
        if ("message", i) in on:
            m["content"] += " edited"
        msgs.append(m)
    if extra:
        msgs += [{"role": "assistant", "content": "a reply"}, {"role": "user", "content": "go on"}]
    return {"model": parent["model"], "messages": msgs, "tools": tools}


def _rank(edit: tuple[str, int]) -> tuple[int, int, int]:
    """Cache order of an edit (OpenAI Chat: tools, then the system prompt and the messages)."""
    what, i = edit
    return (0 if what in ("tool", "drop") else 1, i, 0 if what == "insert" else 1)


def _independent(edits: list[tuple[str, int]]) -> bool:
    """No two edits touch one segment or neighbouring messages (an insert
    next to an edited message is one replaced run: one break, by design)."""
    tools = [i for w, i in edits if w in ("tool", "drop")]
    edited = {i for w, i in edits if w == "message"}
    inserts = [i for w, i in edits if w == "insert"]
    return (len(tools) == len(set(tools)) and sum(w == "drop" for w, _ in edits) <= 1
            and len(inserts) == len(set(inserts)) and all(i not in edited and i - 1 not in edited for i in inserts)
            and all(abs(a - b) > 1 for n, a in enumerate(inserts) for b in inserts[n + 1 :]))


@st.composite
def edited_children(draw):
    """``(parent, edits in cache order, extra)``: k independent edits of
    distinct segments (tool descriptions, a dropped tool, messages, inserted
    messages), and maybe a reply and a turn appended."""
    n_tools, n_msgs = draw(st.integers(2, 4)), draw(st.integers(2, 5))
    parent = _parent(n_tools, n_msgs)
    choices = ([("tool", i) for i in range(n_tools)] + [("drop", i) for i in range(n_tools)]
               + [("message", i) for i in range(n_msgs + 1)] + [("insert", i) for i in range(1, n_msgs + 1)])
    edits = draw(st.lists(st.sampled_from(choices), min_size=1, max_size=3, unique=True).filter(_independent))
    return parent, sorted(edits, key=_rank), draw(st.booleans())


@settings(deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much])
@given(edited_children())
def test_k_edits_give_k_breaks_in_cache_order_each_kept_as_diff_reports(case):
    parent, edits, extra = case
    p_body, c_body = orjson.dumps(parent), orjson.dumps(_make(parent, edits, extra))
    found = breaks_of(p_body, c_body)
    assert len(found) == len(edits), ([b.detail for b in found], edits)
    for n, (brk, (what, i)) in enumerate(zip(found, edits)):
        where = "tools" if what in ("tool", "drop") else "messages"
        assert brk.kind == ("tools_changed" if where == "tools" else
                            "system_changed" if (what, i) == ("message", 0) else "messages_rewritten"), brk
        assert brk.pointer.startswith(f"/{where}/"), brk
        undone = orjson.dumps(_make(parent, edits[n + 1 :], extra))
        assert brk.kept == compare(p_body, undone).cache.predicted_cached
    offsets = [b.offset for b in found]
    assert offsets == sorted(offsets)
    # the fully fixed child only appends: it keeps the parent's whole cacheable prefix
    full = compare(p_body, orjson.dumps(_make(parent, [], extra)))
    assert full.cause.kind in ("identical", "appended_only") and found[-1].kept == full.cache.predicted_cached


@settings(deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.integers(2, 4), st.integers(2, 5), st.integers(0, 3))
def test_an_append_only_child_has_no_break(n_tools, n_msgs, more):
    parent = _parent(n_tools, n_msgs)
    child = json.loads(json.dumps(parent))
    child["messages"] += [{"role": "user", "content": f"turn {i}"} for i in range(more)]
    assert breaks_of(orjson.dumps(parent), orjson.dumps(child)) == []


def test_an_inserted_message_is_one_break_not_one_per_later_message():
    parent = _parent(2, 5)
    child = json.loads(json.dumps(parent))
    child["messages"].insert(2, {"role": "user", "content": "a stray reminder"})
    p_body, c_body = orjson.dumps(parent), orjson.dumps(child)
    found = breaks_of(p_body, c_body)
    assert [b.kind for b in found] == ["messages_rewritten"] and "inserted" in found[0].detail
    assert found[0].pointer == "/messages/2" and found[0].parent_bytes == 0
    assert found[0].kept == compare(p_body, p_body).cache.predicted_cached


def test_a_removed_tool_and_an_edited_message_are_two_breaks():
    parent = _parent(3, 4)
    child = json.loads(json.dumps(parent))
    del child["tools"][1]
    child["messages"][3]["content"] += " edited"
    found = breaks_of(orjson.dumps(parent), orjson.dumps(child))
    assert [b.kind for b in found] == ["tools_changed", "messages_rewritten"]
    assert found[0].detail == "tool removed: tool_1" and found[0].side == "parent"
    assert found[1].pointer == "/messages/3/content"
    assert found[0].kept is not None and found[1].kept is not None and found[1].kept > found[0].kept


# -- the real harness fixtures ------------------------------------------------------

def _bodies(folder: Path) -> tuple[bytes, bytes, str]:
    p, meta = snapshot.load_body(folder / "parent.snapshot")
    c, _ = snapshot.load_body(folder / "child.snapshot")
    return p, c, meta.provider


def _at(body: bytes, ptr: str) -> bytes:
    a, b = value_spans(body, [ptr])[ptr]
    return body[a:b]


def _splice(body: bytes, ptr: str, new: bytes) -> bytes:
    a, b = value_spans(body, [ptr])[ptr]
    return body[:a] + new + body[b:]


def _qwen_parent_next(parent: bytes, child: bytes) -> bytes:
    """The parent's next request as the fixture's parent would send it: its
    own messages, then the ``agent`` call with the arguments the scripted
    model gave (tests/harness/test_qwen_code.py) and a tool result of its
    own. The fixture records the fork request and the child only, so this
    turn is built from the child's bytes with those two values put back."""
    spans = element_spans(child, "/messages")
    call, result = (child[a:b] for a, b in spans[2:4])
    args = orjson.dumps(orjson.dumps({"subagent_type": "fork", "description": "count files",
                                      "prompt": "Count the files in this folder and report the number."}).decode())
    call = call.replace(b'"arguments":"{}"', b'"arguments":' + args)
    result = result.replace(b"processing in background", b"agent fork-1 is running; its result will follow")
    end = value_spans(parent, ["/messages"])["/messages"][1] - 1
    return parent[:end] + b"," + call + b"," + result + parent[end:]


def test_qwen_code_fork_lists_the_tools_break_with_what_restoring_them_keeps():
    parent, child, dialect = _bodies(QWEN)
    found = breaks_of(parent, child, dialect=dialect)
    assert len(found) == 1
    brk = found[0]
    assert brk.kind == "tools_changed" and brk.detail == "tool removed: agent, get_goal, list_agents, update_goal"
    assert brk.elements == 4 and brk.child_bytes == 0 and brk.tokens > 0
    restored = _splice(child, "/tools", _at(parent, "/tools"))
    fixed = compare(parent, restored, dialect=dialect)
    assert fixed.cause.kind == "appended_only"
    assert brk.kept == fixed.cache.predicted_cached == fixed.tokens.parent_prompt
    headline = compare(parent, child, dialect=dialect)
    assert brk.kept > headline.cache.predicted_cached


def test_qwen_code_fork_against_the_parents_next_turn_lists_every_rewrite():
    parent, child, dialect = _bodies(QWEN)
    nxt = _qwen_parent_next(parent, child)
    found = breaks_of(nxt, child, dialect=dialect)
    assert [b.kind for b in found] == ["tools_changed", "messages_rewritten", "messages_rewritten"]
    assert found[0].detail.startswith("tool removed: agent, get_goal, list_agents, update_goal")
    assert found[1].pointer == "/messages/2/tool_calls/0/function/arguments"
    assert found[1].detail.startswith("tool-call arguments rewritten")
    assert found[2].pointer.startswith("/messages/3/content")
    kept = [b.kept for b in found]
    assert all(k is not None for k in kept) and kept == sorted(kept) and kept[0] < kept[-1]
    # the fully fixed child, built by hand: the parent's tools and its two messages put back
    fixed = _splice(child, "/tools", _at(nxt, "/tools"))
    for i in (2, 3):
        fixed = _splice(fixed, f"/messages/{i}", _at(nxt, f"/messages/{i}"))
    by_hand = compare(nxt, fixed, dialect=dialect)
    assert by_hand.cause.kind == "appended_only"
    assert kept[-1] == by_hand.cache.predicted_cached
    assert kept[-1] > compare(nxt, child, dialect=dialect).cache.predicted_cached


def test_claude_code_fork_has_no_break_on_anthropics_api_and_one_on_a_third_party_cache():
    parent, child, dialect = _bodies(CLAUDE)
    assert breaks_of(parent, child, dialect=dialect) == []
    third = "http://127.0.0.1:8080/v1/messages"
    found = breaks_of(parent, child, dialect=dialect, endpoint=third)
    assert len(found) == 1 and found[0].kind == "system_changed" and found[0].pointer == "/system/0/text"
    fixed = _splice(child, "/system/0", _at(parent, "/system/0"))
    assert found[0].kept == compare(parent, fixed, dialect=dialect, endpoint=third).cache.predicted_cached > 0


# -- `fidelity diff` itself (issues #30 and #33) --------------------------------------

def _diff(capsys, *args: str) -> str:
    from fidelity import cli

    assert cli.main(["diff", *args]) == 0
    return capsys.readouterr().out


def test_diff_lists_every_break_and_pads_no_line_when_piped(capsys, monkeypatch):
    monkeypatch.setenv("COLUMNS", "80")
    out = _diff(capsys, str(QWEN / "parent.snapshot"), str(QWEN / "child.snapshot"))
    assert out and not [line for line in out.splitlines() if line.endswith(" ")]
    assert "breaks (1, in cache order" in out
    assert "1. tools_changed: tool removed: agent, get_goal, list_agents, update_goal" in out
    assert "fully fixed child keeps" in out


def test_diff_json_lists_the_breaks_and_says_why_the_raw_byte_is_another(capsys):
    doc = json.loads(_diff(capsys, str(QWEN / "parent.snapshot"), str(QWEN / "child.snapshot"), "--json"))
    assert [b["kind"] for b in doc["breaks"]] == ["tools_changed"]
    brk = doc["breaks"][0]
    assert brk["kept_if_fixed"] > doc["cache"]["predicted_cached"] and brk["side"] == "parent"
    # raw 38398 vs cache view 28497: the child's messages array grows in body order, which
    # the cache reads after the tools
    assert doc["raw"]["first_divergent_byte"] != doc["cache_view"]["first_divergent_byte"]
    assert doc["raw"]["pointer"] == "/messages" and "after where it parts" in doc["raw"]["note"]
    # the tool removal's deepdiff names the tools, not a schema path of two unrelated tools
    assert doc["cause"]["deepdiff"] == {"dictionary_item_removed": [
        "root['agent']", "root['get_goal']", "root['list_agents']", "root['update_goal']"]}


def test_segment_is_named_after_its_pointer(capsys, tmp_path):
    body = {"model": "gpt-4o", "messages": [{"role": "system", "content": "You are terse. " * 200},
                                            {"role": "user", "content": "one"},
                                            {"role": "assistant", "content": "two"},
                                            {"role": "user", "content": "three"}]}
    child = json.loads(json.dumps(body))
    child["messages"][3]["content"] = "three, edited"
    p, c = tmp_path / "p.json", tmp_path / "c.json"
    p.write_bytes(orjson.dumps(body))
    c.write_bytes(orjson.dumps(child))
    out = _diff(capsys, str(p), str(c))
    assert "segment messages[3], pointer '/messages/3/content'" in out
    doc = json.loads(_diff(capsys, str(p), str(c), "--json"))
    assert doc["cache_view"]["segment"]["name"] == "messages[3]"
    assert doc["breaks"][0]["pointer"] == "/messages/3/content"


def test_diff_and_scan_agree_on_the_claude_code_fork_folder():
    """One simulator, one figure: ``fidelity diff FOLDER`` and ``fidelity scan``
    read the same tokens for the child (Anthropic's API does not key on
    Claude Code's billing block, and the snapshots' loopback URL names no
    provider)."""
    from fidelity.capture.snapshot import Loaded
    from fidelity.pairs.folder import compare_pair
    from fidelity.scan import scan

    (p_body, p_meta), (c_body, c_meta) = (snapshot.load_body(CLAUDE / n) for n in ("parent.snapshot",
                                                                                 "child.snapshot"))
    res = compare_pair(Loaded(CLAUDE / "parent.snapshot", p_body, p_meta),
                       Loaded(CLAUDE / "child.snapshot", c_body, c_meta))
    totals = scan([CLAUDE], workers=1)["totals"]
    assert totals["requests"] == 2 and totals["read_tokens"] > 0
    assert res.cache.predicted_cached == totals["read_tokens"]  # the parent reads nothing
    assert res.cache.lost == totals["lost_tokens"] == 0


# -- other dialects: the fixed child is built in each body's own shape ---------------------

_LONG = "You are careful and terse. " * 300


def _anthropic() -> dict:
    return {"model": "claude-sonnet-4-5", "max_tokens": 100,
            "tools": [{"name": f"t{i}", "description": "d" * 200, "input_schema": {"type": "object"}} for i in range(3)],
            "system": [{"type": "text", "text": _LONG, "cache_control": {"type": "ephemeral"}}],
            "messages": [{"role": "user", "content": "hi " * 300}, {"role": "assistant", "content": "ok"},
                         {"role": "user", "content": [{"type": "text", "text": "go",
                                                       "cache_control": {"type": "ephemeral"}}]}]}


def test_anthropic_moved_marker_is_no_break_and_each_fix_keeps_what_diff_reports():
    parent = _anthropic()
    moved = json.loads(json.dumps(parent))
    moved["messages"][2]["content"][0].pop("cache_control")
    moved["messages"].append({"role": "user", "content": [{"type": "text", "text": "more",
                                                           "cache_control": {"type": "ephemeral"}}]})
    p_body = orjson.dumps(parent)
    assert breaks_of(p_body, orjson.dumps(moved)) == []  # the cache keys on content, not on markers
    child = json.loads(json.dumps(moved))
    child["tools"].insert(1, {"name": "report", "description": "r", "input_schema": {"type": "object"}})
    child["messages"][1]["content"] = "okay"
    found = breaks_of(p_body, orjson.dumps(child))
    assert [(b.kind, b.detail) for b in found] == [("tools_changed", "tool added: report"),
                                                   ("messages_rewritten", "text edited (at /messages/1)")]
    undone = json.loads(json.dumps(child))
    del undone["tools"][1]
    assert found[0].kept == compare(p_body, orjson.dumps(undone)).cache.predicted_cached
    undone["messages"][1]["content"] = "ok"
    assert found[1].kept == compare(p_body, orjson.dumps(undone)).cache.predicted_cached > found[0].kept


def test_a_tool_reorder_is_one_break():
    parent = _anthropic()
    child = json.loads(json.dumps(parent))
    child["tools"].reverse()
    found = breaks_of(orjson.dumps(parent), orjson.dumps(child))
    assert len(found) == 1 and found[0].detail.startswith("tools reordered: ")
    assert found[0].kept == compare(orjson.dumps(parent), orjson.dumps(parent)).cache.predicted_cached


def test_a_string_system_prompt_and_a_gemini_body_are_rebuilt():
    parent = _anthropic()
    child = json.loads(json.dumps(parent))
    child["system"] = "a string system prompt"
    found = breaks_of(orjson.dumps(parent), orjson.dumps(child))
    assert [b.pointer for b in found] == ["/system"]
    assert found[0].kept == compare(orjson.dumps(parent), orjson.dumps(parent)).cache.predicted_cached
    gem = {"systemInstruction": {"parts": [{"text": _LONG * 2}]},
           "tools": [{"functionDeclarations": [{"name": f"f{i}", "description": "x" * 100} for i in range(3)]}],
           "contents": [{"role": "user", "parts": [{"text": "hello " * 1300}]}, {"role": "model", "parts": [{"text": "hi"}]}]}
    g_child = json.loads(json.dumps(gem))
    g_child["tools"][0]["functionDeclarations"][1]["description"] = "changed"
    g_child["contents"][1]["parts"][0]["text"] = "hey"
    p_body = orjson.dumps(gem)
    found = breaks_of(p_body, orjson.dumps(g_child), model="gemini-2.5-flash")
    assert [b.pointer for b in found] == ["/tools/0/functionDeclarations/1/description", "/contents/1/parts/0/text"]
    whole = compare(p_body, p_body, model="gemini-2.5-flash").cache.predicted_cached
    assert whole > 0 and found[-1].kept == whole


def test_a_child_editing_every_message_builds_a_bounded_number_of_counterfactuals(monkeypatch):
    from fidelity.diff import breaks as breaks_mod

    monkeypatch.setattr(breaks_mod, "MAX_BUILT", 2)
    parent = _parent(2, 6)
    child = json.loads(json.dumps(parent))
    for i in range(1, 7):
        child["messages"][i]["content"] += " edited"
    p_body = orjson.dumps(parent)
    found = breaks_of(p_body, orjson.dumps(child))
    assert len(found) == 6
    assert [b.kept is None for b in found] == [False, False, True, True, True, False]
    assert found[-1].kept == compare(p_body, p_body).cache.predicted_cached


def _chat_with_call(call_id: str, result: str) -> dict:
    return {"model": "gpt-4o", "messages": [
        {"role": "system", "content": "You are terse. " * 400}, {"role": "user", "content": "do it " * 100},
        {"role": "assistant", "content": None,
         "tool_calls": [{"id": call_id, "type": "function", "function": {"name": "ls", "arguments": "{}"}}]},
        {"role": "tool", "tool_call_id": call_id, "content": result}, {"role": "user", "content": "next " * 50}]}


def test_a_renamed_tool_call_id_is_one_break_with_the_result_that_answers_it():
    parent = _chat_with_call("call_1", "a b c")
    p_body = orjson.dumps(parent)
    found = breaks_of(p_body, orjson.dumps(_chat_with_call("call_X", "a b c")))
    assert len(found) == 1 and found[0].elements == 2
    assert found[0].detail == "tool-call id renamed: call_1 → call_X (at /messages/2)"
    assert found[0].kept == compare(p_body, p_body).cache.predicted_cached
    # a result that also changes its text has a change of its own: two breaks
    found = breaks_of(p_body, orjson.dumps(_chat_with_call("call_X", "a b c d")))
    assert [b.pointer.split("/")[:3] for b in found] == [["", "messages", "2"], ["", "messages", "3"]]


_NAMES = st.sampled_from(["ls", "cat", "grep", "edit"])
_TEXT = st.text(alphabet="ab \"\\é\n", max_size=12)


@st.composite
def chat_bodies(draw):
    """Small Chat bodies: tools whose names may repeat, messages of any
    role, assistant tool calls whose ids may repeat."""
    tools = [{"type": "function", "function": {"name": draw(_NAMES), "description": draw(_TEXT)}}
             for _ in range(draw(st.integers(0, 4)))]
    msgs = [{"role": "system", "content": draw(_TEXT)}]
    for _ in range(draw(st.integers(1, 5))):
        if draw(st.booleans()):
            msgs.append({"role": draw(st.sampled_from(["user", "assistant"])), "content": draw(_TEXT)})
        else:
            cid = draw(st.sampled_from(["c1", "c2"]))
            msgs.append({"role": "assistant", "content": None,
                         "tool_calls": [{"id": cid, "type": "function",
                                         "function": {"name": draw(_NAMES), "arguments": draw(_TEXT)}}]})
            msgs.append({"role": "tool", "tool_call_id": cid, "content": draw(_TEXT)})
    body = {"model": "gpt-4o", "messages": msgs}
    if tools:
        body["tools"] = tools
    return body


@settings(deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(chat_bodies(), chat_bodies())
def test_fixing_every_break_leaves_a_child_that_only_appends(parent, child):
    from fidelity.diff._rebuild import fixed_child
    from fidelity.diff.breaks import _align

    p_body, c_body = orjson.dumps(parent), orjson.dumps(child)
    found = breaks_of(p_body, c_body)
    assert (found == []) == (compare(p_body, c_body).cause.kind in ("identical", "appended_only"))
    view = wire.get("openai-chat")
    slots, groups = _align(view.cache_view(p_body), view.cache_view(c_body))
    assert len(groups) == len(found)
    fixed = compare(p_body, fixed_child(p_body, c_body, slots, set(range(len(groups)))))
    assert fixed.cause.kind in ("identical", "appended_only"), (fixed.cause, [b.detail for b in found])


_CC = st.sampled_from([None, {"type": "ephemeral"}])


@st.composite
def anthropic_bodies(draw):
    """Small Messages bodies: repeated tool names, a string or block system
    prompt, string or block contents, markers here and there."""
    def block(text):
        b = {"type": "text", "text": text}
        cc = draw(_CC)
        if cc:
            b["cache_control"] = cc
        return b

    body: dict = {"model": "claude-sonnet-4-5", "max_tokens": 10}
    if draw(st.booleans()):
        body["tools"] = [{"name": draw(_NAMES), "description": draw(_TEXT), "input_schema": {"type": "object"}}
                         for _ in range(draw(st.integers(1, 3)))]
    if draw(st.booleans()):
        body["system"] = draw(st.one_of(_TEXT, st.lists(_TEXT.map(block), min_size=1, max_size=3)))
    body["messages"] = [{"role": "user" if i % 2 == 0 else "assistant",
                         "content": draw(st.one_of(_TEXT, st.lists(_TEXT.map(block), min_size=1, max_size=3)))}
                        for i in range(draw(st.integers(1, 4)))]
    return body


@settings(deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(anthropic_bodies(), anthropic_bodies())
def test_fixing_every_break_of_an_anthropic_child_leaves_one_that_only_appends(parent, child):
    from fidelity.diff._prompts import _unmarked
    from fidelity.diff._rebuild import fixed_child
    from fidelity.diff.breaks import _align
    from fidelity.errors import InputError

    p_body, c_body = orjson.dumps(parent), orjson.dumps(child)
    try:
        breaks_of(p_body, c_body, dialect="anthropic-messages")
    except InputError:  # more than 4 breakpoints: Anthropic refuses the child itself
        return
    view = wire.get("anthropic-messages")
    slots, groups = _align(_unmarked(view.cache_view(p_body)), _unmarked(view.cache_view(c_body)))
    try:
        fixed = compare(p_body, fixed_child(p_body, c_body, slots, set(range(len(groups)))),
                        dialect="anthropic-messages")
    except InputError:  # the parent's markers put back beside the child's: more than 4
        return
    assert fixed.cause.kind in ("identical", "appended_only"), fixed.cause


@st.composite
def gemini_bodies(draw):
    body: dict = {"contents": [{"role": "user" if i % 2 == 0 else "model",
                                "parts": [{"text": draw(_TEXT)} for _ in range(draw(st.integers(1, 2)))]}
                               for i in range(draw(st.integers(1, 4)))]}
    if draw(st.booleans()):
        body["systemInstruction"] = {"parts": [{"text": draw(_TEXT)}]}
    if draw(st.booleans()):
        body["tools"] = [{"functionDeclarations": [{"name": draw(_NAMES), "description": draw(_TEXT)}
                                                   for _ in range(draw(st.integers(1, 3)))]}]
    return body


@st.composite
def responses_bodies(draw):
    body: dict = {"model": "gpt-4o", "input": [{"role": draw(st.sampled_from(["user", "assistant"])),
                                                "content": draw(_TEXT)} for _ in range(draw(st.integers(1, 4)))]}
    if draw(st.booleans()):
        body["instructions"] = draw(_TEXT)
    if draw(st.booleans()):
        body["tools"] = [{"type": "function", "name": draw(_NAMES), "parameters": {}}
                         for _ in range(draw(st.integers(1, 3)))]
    return body


def _fully_fixed_only_appends(dialect: str, parent: dict, child: dict, model: str | None = None) -> None:
    from fidelity.diff._rebuild import fixed_child
    from fidelity.diff.breaks import _align

    p_body, c_body = orjson.dumps(parent), orjson.dumps(child)
    found = breaks_of(p_body, c_body, dialect=dialect, model=model)
    view = wire.get(dialect)
    slots, groups = _align(view.cache_view(p_body), view.cache_view(c_body))
    assert len(groups) == len(found)
    fixed = compare(p_body, fixed_child(p_body, c_body, slots, set(range(len(groups)))), dialect=dialect, model=model)
    assert fixed.cause.kind in ("identical", "appended_only"), fixed.cause


@settings(deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(gemini_bodies(), gemini_bodies())
def test_fixing_every_break_of_a_gemini_child_builds_missing_containers(parent, child):
    _fully_fixed_only_appends("gemini", parent, child, "gemini-2.5-flash")


@settings(deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(responses_bodies(), responses_bodies())
def test_fixing_every_break_of_a_responses_child_leaves_one_that_only_appends(parent, child):
    _fully_fixed_only_appends("openai-responses", parent, child)
