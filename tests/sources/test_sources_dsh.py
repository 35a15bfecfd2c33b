"""DSH session reader on small hand-written logs: structure, messages, errors,
and a generated round trip (events written -> messages read back)."""

from __future__ import annotations

import json
import tempfile
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from fidelity.errors import InputError
from fidelity.model import Message, Reasoning, Request, Route, SystemBlock, Text, ToolCall, ToolResult
from fidelity.sources.dsh import (
    Sidecars,
    find_sessions,
    read_session,
    sidecars,
    step_messages,
    step_request,
)

DATA = Path(__file__).parents[1] / "data" / "sources"


def test_valid_log_structure() -> None:
    s = read_session(DATA / "dsh_valid.jsonl")
    assert s.id == "s-1" and not s.is_child and s.parent_id is None and s.seed_length is None
    assert [t.turn for t in s.turns] == [1, 2]
    first, second = s.turns
    assert first.completed and first.end_line == 16
    assert second.end_line is None  # in flight is fine
    assert [(st.turn, st.step) for st in s.steps()] == [(1, 1), (1, 2), (2, 1)]
    step1 = s.step(1, 1)
    assert step1.usage.input_tokens == 100 and step1.usage.cache_read_tokens == 0
    assert step1.usage.output_tokens == 9 and step1.usage.reasoning_tokens == 3
    assert step1.usage.prompt_tokens == 100
    assert step1.header.provider == "deepseek-official" and step1.header.reason == "initial"
    assert step1.header.system is None and step1.header.tools is None  # placeholders
    assert step1.finish == {"kind": "tool-calls"}
    # step 2 has no header event of its own: the last one still applies
    assert s.step(1, 2).header == step1.header
    assert s.step(1, 2).usage.prompt_tokens == 148


def test_packed_rows_take_one_seq_per_element() -> None:
    s = read_session(DATA / "dsh_valid.jsonl")
    packed = next(e for e in s.events if e.type == "reasoning-chunks")
    after = s.events[s.events.index(packed) + 1]
    assert packed.span == 2 and after.seq == packed.seq + 2


def test_step_messages_follow_the_surface() -> None:
    s = read_session(DATA / "dsh_valid.jsonl")
    assert step_messages(s, 1, 1) == (Message("user", (Text("List the files."),)),)
    call = ToolCall(id="call_1", name="bash", arguments={"command": "ls", "description": "list"},
                    arguments_json='{"command": "ls", "description": "list"}')
    m2 = step_messages(s, 1, 2)
    assert m2[1] == Message("assistant", (Reasoning("I will run ls."), call))
    assert m2[2] == Message("tool", (ToolResult(call_id="call_1", name="bash", content="a.txt\n"),))
    assert m2[1].parts[1].arguments_json == '{"command": "ls", "description": "list"}'
    # the queued inbox message counts only once delivered as user/message
    m3 = step_messages(s, 2, 1)
    assert m3[-1] == Message("user", (Text("And now?"),))
    assert sum(1 for m in m3 if m.text() == "And now?") == 1
    assert m3[:4] == m2 + (Message("assistant", (Text("One file: a.txt"),)),)


def test_compaction_replace_shadows_a_range() -> None:
    s = read_session(DATA / "dsh_compaction.jsonl")
    assert [m.text() for m in step_messages(s, 1, 1)] == ["first"]
    assert [m.text() for m in step_messages(s, 1, 2)] == ["checkpoint"]


def test_step_request_routes_and_keeps_tool_order() -> None:
    s = read_session(DATA / "dsh_valid.jsonl")
    schema = {"name": "bash", "description": "run", "parameters": {"type": "object", "required": ["z", "a"],
                                                                  "properties": {"z": {}, "a": {}}}}
    req = step_request(s, 1, 2, "You are terse.", [schema])
    assert isinstance(req, Request)
    assert req.route == Route("deepseek", "deepseek-v4-flash")
    assert req.system == (SystemBlock("You are terse."),)
    assert list(req.tools[0].parameters["properties"]) == ["z", "a"]
    assert req.messages == step_messages(s, 1, 2)
    # the same through a Sidecars object, revision 0
    via = step_request(s, 1, 2, sidecars=Sidecars(system_initial="You are terse.", tools_initial=(schema,)))
    assert via == req


def test_placeholder_without_text_is_an_input_error() -> None:
    s = read_session(DATA / "dsh_valid.jsonl")
    with pytest.raises(InputError, match=r"dsh_valid\.jsonl:5: .*\{\{system\}\}; pass system= or sidecars="):
        step_request(s, 1, 1)
    with pytest.raises(InputError, match=r"dsh_valid\.jsonl:5: .*\{\{tools\}\}; pass tools= or sidecars="):
        step_request(s, 1, 1, "sys")
    with pytest.raises(InputError, match=r"\{\{tools\}\}"):
        step_request(s, 1, 1, sidecars=Sidecars(system_initial="sys"))


def test_inputs_are_not_mutated() -> None:
    schema = {"name": "t", "parameters": {"b": 1, "a": 2}}
    before = json.dumps(schema)
    s = read_session(DATA / "dsh_valid.jsonl")
    step_request(s, 1, 1, "sys", [schema])
    assert json.dumps(schema) == before


@pytest.mark.parametrize(
    "name, line, fragment",
    [
        ("dsh_not_json.jsonl", 3, "not valid JSON"),
        ("dsh_no_header.jsonl", 1, "missing session header"),
        ("dsh_orphan_result.jsonl", 5, "call_9"),
        ("dsh_bad_shape.jsonl", 4, "content must be a list"),
        ("dsh_not_object.jsonl", 3, "must be an object"),
        ("dsh_stray_turn_end.jsonl", 2, "not open"),
    ],
)
def test_malformed_logs_name_file_and_line(name: str, line: int, fragment: str) -> None:
    with pytest.raises(InputError) as info:
        read_session(DATA / name)
    err = info.value
    assert err.path.endswith(name) and err.line == line and fragment in err.problem
    assert "\n" not in str(err)


def test_bad_replace_and_empty_file() -> None:
    with pytest.raises(InputError) as info:
        read_session(DATA / "dsh_bad_replace.jsonl")
    assert info.value.line == 9 and "77..78" in info.value.problem
    with pytest.raises(InputError, match="empty file"):
        read_session(DATA / "dsh_empty.jsonl")
    with pytest.raises(InputError, match="no such file"):
        read_session(DATA / "absent.jsonl")


def test_find_sessions_groups_parent_and_children(tmp_path: Path) -> None:
    scenario = tmp_path / "a" / "fork"
    scenario.mkdir(parents=True)
    text = (DATA / "dsh_valid.jsonl").read_text()
    (scenario / "session.jsonl").write_text(text)
    child = json.dumps({"type": "session", "id": "c", "parentSession": "s-1", "seedLength": 0}) + "\n"
    (scenario / "session.2.jsonl").write_text(child)
    (scenario / "session.10.jsonl").write_text(child)
    (scenario / "notes.jsonl").write_text("x")
    groups = find_sessions(tmp_path)
    assert len(groups) == 1 and groups[0].name == "fork"
    assert groups[0].parent.id == "s-1"
    assert [c.index for c in groups[0].children] == [2, 10]
    assert all(c.parent_id == "s-1" for c in groups[0].children)


def test_sidecar_resolution_follows_class_pins(tmp_path: Path) -> None:
    snaps = tmp_path / "snapshots"
    for name in ("pin", "other", "user", "child-scn"):
        (snaps / name).mkdir(parents=True)
    (snaps / "pin" / "system-prompt.expected.md").write_text(
        "PIN PROMPT\n\n\n<!-- system/message change 1 -->\n\nCHANGED\n")
    (snaps / "pin" / "tool-schemas.expected.json").write_text(
        json.dumps({"initial": [{"name": "a"}], "changes": [[{"name": "b"}]]}))
    (snaps / "other" / "tool-schemas.expected.json").write_text(json.dumps({"initial": [{"name": "o"}], "changes": []}))
    (snaps / "child-scn" / "system-prompt.1.expected.md").write_text("CHILD\n")
    classes = {"scenarios": [
        {"name": "pin", "classPin": "pin", "systemPromptSource": None, "toolSchemasSource": "other"},
        {"name": "user", "classPin": "pin", "systemPromptSource": None, "toolSchemasSource": None},
        {"name": "child-scn", "classPin": "pin", "systemPromptSource": None, "toolSchemasSource": None},
    ]}
    sc = sidecars(snaps / "user", classes)
    assert sc.system(0) == "PIN PROMPT" and sc.system(1) == "CHANGED" and sc.system(5) == "PIN PROMPT"
    assert [t["name"] for t in sc.tools(0)] == ["o"]  # the pin's toolSchemasSource wins
    own = sidecars(snaps / "child-scn", classes, child=1)
    assert own.system() == "CHILD" and own.system_path.name == "system-prompt.1.expected.md"
    assert sidecars(snaps / "child-scn", classes).system() == "PIN PROMPT"
    # a folder not in the table uses its own sidecars, or none
    assert sidecars(snaps / "other", None).tools()[0]["name"] == "o"
    assert sidecars(snaps / "user", None) == Sidecars()


# --------------------------------------------------------------------------- generated round trip

_text = st.text(st.characters(blacklist_categories=("Cs",)), max_size=30)
_json_obj = st.dictionaries(st.text(max_size=5), st.integers() | _text, max_size=4)


@st.composite
def conversations(draw: st.DrawFn) -> list[tuple[str, list]]:
    """A list of (user text, assistant steps); each step is (reasoning, text, calls)."""
    turns = []
    for _ in range(draw(st.integers(1, 3))):
        steps = []
        for _ in range(draw(st.integers(1, 3))):
            calls = draw(st.lists(_json_obj, max_size=2))
            steps.append((draw(st.none() | _text), draw(_text), calls))
        turns.append((draw(_text), steps))
    return turns


def _write_log(turns: list[tuple[str, list]]) -> tuple[list[str], list[Message]]:
    rows = [{"type": "session", "id": "gen"}]
    expected: list[Message] = []
    n = 0
    for t, (user, steps) in enumerate(turns, 1):
        rows += [{"type": "turn/start", "data": {"turn": t}}, {"type": "step/start", "data": {"turn": t, "step": 1}},
                 {"type": "user/message", "data": {"content": [{"type": "text", "text": user}]}, "surfaceOp": "append"}]
        expected.append(Message("user", (Text(user),)))
        for s, (reasoning, text, calls) in enumerate(steps, 1):
            if s > 1:
                rows.append({"type": "step/start", "data": {"turn": t, "step": s}})
            content, parts = [], []
            if reasoning is not None:
                content.append({"type": "reasoning", "text": reasoning})
                parts.append(Reasoning(reasoning))
            content.append({"type": "text", "text": text})
            parts.append(Text(text))
            ids = []
            for args in calls:
                n += 1
                ids.append(f"call_{n}")
                raw = json.dumps(args, ensure_ascii=False)
                content.append({"type": "tool-call", "id": f"call_{n}", "name": "f", "arguments": raw})
                parts.append(ToolCall(id=f"call_{n}", name="f", arguments=args, arguments_json=raw))
            rows.append({"type": "assistant/message", "data": {"turn": t, "step": s, "message": {
                "role": "assistant", "content": content}}, "surfaceOp": "append"})
            expected.append(Message("assistant", tuple(parts)))
            for cid in ids:
                rows.append({"type": "tool/result", "data": {"turn": t, "step": s, "message": {"content": [
                    {"type": "tool-result", "toolCallId": cid, "content": [{"type": "text", "text": cid}],
                     "isError": False}]}}, "surfaceOp": "append"})
                expected.append(Message("tool", (ToolResult(call_id=cid, name="f", content=cid),)))
            rows.append({"type": "step/end", "data": {"turn": t, "step": s}})
        rows.append({"type": "turn/end", "data": {"turn": t, "reason": {"kind": "completed"}}})
    return [json.dumps(r, ensure_ascii=False) for r in rows], expected


@given(conversations())
def test_generated_logs_read_back_to_their_messages(turns: list) -> None:
    lines, expected = _write_log(turns)
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "session.jsonl"
        path.write_text("\n".join(lines) + "\n", encoding="utf-8")
        s = read_session(path)
    last_turn = s.turns[-1]
    last = last_turn.steps[-1]
    # the final request holds everything but the final assistant message and its results
    got = step_messages(s, last.turn, last.step)
    assert got == tuple(expected[: len(got)])
    assert expected[len(got)].role == "assistant"
    # each step's messages extend the previous step's (no compaction here)
    previous: tuple = ()
    for step in s.steps():
        now = step_messages(s, step.turn, step.step)
        assert now[: len(previous)] == previous and len(now) > len(previous)
        previous = now
