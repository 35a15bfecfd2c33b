"""Composition variants: definitions, deltas, and the invariants each delta keeps."""

from __future__ import annotations

import json
from dataclasses import replace

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from fidelity import compose, fixtures
from fidelity.errors import InputError, UnknownName
from fidelity.model import Reasoning, Tool, ToolCall, thaw
from fidelity.strategies import tool_lists

FX = fixtures.load()
HISTORY = {s.name: s.history for s in FX.sessions}
CODING = HISTORY["coding-agent"]
VARIANTS = compose.load_variants()


def test_every_variant_is_documented_and_declares_its_economics():
    names = [v.name for v in VARIANTS]
    assert len(names) == len(set(names)) >= 17
    for v in VARIANTS:
        assert v.summary and v.token_effect and v.kv_cache_effect, v.name
        assert v.expect in compose.EXPECTATIONS
        if v.cache_preserving:
            assert v.expect == "keeps-prefix", v.name
        if v.expect == "defect":
            assert v.cause in {"tools_changed", "system_changed", "messages_rewritten", "params_changed"}
        if v.baseline:
            assert v.baseline in names


def test_required_variants_are_bundled():
    wanted = {"one-shot-fork", "continuable-fork", "persona", "tool-filter", "tool-filter-code-mode",
              "structured-output", "route-change", "spawn", "gemini-placeholder-fork", "claude-placeholder-fork",
              "cache-safe-fallback", "sibling-fanout", "defect-timestamp", "defect-tool-order",
              "defect-schema-key-order", "defect-argument-key-order", "defect-reasoning-dropped"}
    assert wanted <= set(compose.variant_names())


@pytest.mark.parametrize("variant", VARIANTS, ids=lambda v: v.name)
def test_apply_never_mutates_the_parent(variant):
    before = repr(CODING)
    child = variant.apply(CODING, "do the thing", {"alt_model": "other-model"})
    assert repr(CODING) == before
    assert child != CODING


def test_one_shot_head_is_byte_identical_and_history_is_the_completed_turns():
    child = compose.get_variant("one-shot-fork").apply(CODING, "go")
    assert (child.system, child.tools, child.params, child.route) == (CODING.system, CODING.tools, CODING.params, CODING.route)
    seed = child.messages[:-1]
    assert seed == CODING.messages[: len(seed)]
    assert seed[-1].role == "assistant" and not seed[-1].tool_calls()
    assert child.messages[-1].text() == "go"


def test_continuable_adds_report_tool_and_section_ahead_of_history():
    base = compose.get_variant("one-shot-fork").apply(CODING, "go")
    child = compose.get_variant("continuable-fork").apply(CODING, "go")
    assert [t.name for t in child.tools] == [t.name for t in base.tools] + ["report"]
    assert [b.name for b in child.system] == [b.name for b in base.system] + ["tool:report"]
    assert child.messages == base.messages
    # the head's cache breakpoint moves to the new last block, not duplicated
    assert [b.cache_control is not None for b in child.system].count(True) == 1
    assert child.system[-1].cache_control is not None


def test_code_mode_regenerates_sdk_over_visible_tools():
    plain = compose.get_variant("tool-filter").apply(CODING, "go")
    code = compose.get_variant("tool-filter-code-mode").apply(CODING, "go")
    sdk = {b.name: b.text for b in code.system}["code-mode:sdk"]
    stale = {b.name: b.text for b in plain.system}["code-mode:sdk"]
    assert "function write_file(" in stale and "function write_file(" not in sdk
    assert sdk == compose.render_sdk(code.tools)
    assert plain.tools == code.tools


def test_timestamp_defect_changes_only_the_environment_section():
    base = compose.get_variant("one-shot-fork").apply(CODING, "go")
    child = compose.get_variant("defect-timestamp").apply(CODING, "go")
    changed = [b.name for a, b in zip(base.system, child.system) if a != b]
    assert changed == ["environment"]


def test_schema_key_order_defect_keeps_json_values_but_not_bytes():
    child = compose.get_variant("defect-schema-key-order").apply(CODING, "go")
    for a, b in zip(CODING.tools, child.tools):
        assert thaw(a.parameters) == thaw(b.parameters)
        assert json.dumps(thaw(a.parameters)) != json.dumps(thaw(b.parameters))


def test_argument_key_order_defect_keeps_arguments_but_not_bytes():
    child = compose.get_variant("defect-argument-key-order").apply(CODING, "go")
    changed = 0
    for m in child.messages:
        for p in m.parts:
            if isinstance(p, ToolCall) and len(p.arguments) >= 2:
                assert json.loads(p.arguments_json) == thaw(p.arguments)
                assert list(json.loads(p.arguments_json)) == list(reversed(list(json.loads(
                    next(q for mm in CODING.messages for q in mm.parts if isinstance(q, ToolCall) and q.id == p.id).arguments_json))))
                changed += 1
    assert changed > 5


def test_reasoning_defect_drops_every_reasoning_part():
    child = compose.get_variant("defect-reasoning-dropped").apply(CODING, "go")
    assert any(isinstance(p, Reasoning) for m in CODING.messages for p in m.parts)
    assert not any(isinstance(p, Reasoning) for m in child.messages for p in m.parts)


def test_route_change_needs_the_alt_model():
    v = compose.get_variant("route-change")
    assert v.apply(CODING, "go", {"alt_model": "m2"}).route.model == "m2"
    with pytest.raises(InputError):
        v.apply(CODING, "go")


def test_siblings_differ_only_in_the_directive():
    v = compose.get_variant("sibling-fanout")
    kids = v.children(CODING, ["a", "b", "c"])
    assert len({k.messages[:-1] for k in kids}) == 1
    assert all(k.system == CODING.system and k.tools == CODING.tools for k in kids)


def test_unknown_names_are_reported():
    with pytest.raises(UnknownName):
        compose.get_variant("nope")
    with pytest.raises(UnknownName):
        compose.load_variants_from_bytes(b'[[variant]]\nname="x"\ntitle="x"\nbuilder="nope"\n')
    with pytest.raises(InputError):
        compose.load_variants_from_bytes(b'[[variant]]\nname="x"\n')
    with pytest.raises(InputError):
        compose.load_variants_from_bytes(b"not toml [")


@settings(max_examples=200)
@given(tool_lists(min_size=2, max_size=6), st.integers(0, 2**16))
def test_shuffle_is_a_real_permutation(tools, seed):
    req = replace(CODING, tools=tools)
    out = compose.shuffle_tools(req, req, seed=seed)
    assert sorted(t.name for t in out.tools) == sorted(t.name for t in tools)
    assert [t.name for t in out.tools] != [t.name for t in tools]
    assert req.tools == tools


@settings(max_examples=200)
@given(tool_lists(min_size=1, max_size=6), st.data())
def test_drop_tools_keeps_survivor_order_and_sdk_follows(tools, data):
    names = [t.name for t in tools]
    dropped = data.draw(st.lists(st.sampled_from(names), unique=True))
    req = replace(CODING, tools=tools)
    out = compose.drop_tools(req, req, names=dropped)
    assert [t.name for t in out.tools] == [n for n in names if n not in dropped]
    sdk = compose.render_sdk(out.tools)
    for n in names:
        assert (f"function {n}(" in sdk) == (n not in dropped)


def test_the_code_mode_sdk_declares_each_tool_from_its_schema() -> None:
    tools = [Tool("grep", "Search files. Fast.", {"type": "object", "properties": {
                 "pattern": {"type": "string"}, "mode": {"enum": ["a", "b"]}, "n": {"type": "array", "items": {
                     "type": "integer"}}}, "required": ["pattern"]}),
             Tool("now", None, None)]
    assert compose.render_sdk(tools) == "\n".join([
        "# Code Mode SDK", "Call tools from code through the generated `tools` module:", "", "```ts",
        "declare namespace tools {", "  /** Search files. */",
        '  function grep(args: { pattern: string; mode?: "a" | "b"; n?: Array<number> }): Promise<string>;',
        "  /** . */", "  function now(): Promise<string>;", "}", "```"])
