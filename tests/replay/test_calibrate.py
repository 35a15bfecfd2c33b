"""Calibration of the DeepSeek prompt rendering and cache model.

The real-data tests replay ../shared/real/deepseek-harness (skipped when
absent) and pin the figures the calibration reached, so a regression in
the renderer, tokenizer or cache model fails here.
"""

from __future__ import annotations

import json

import pytest

from fidelity import cache, cli, tokens, wire
from fidelity.cache import DEEPSEEK_UNIT, CacheModel, PromptTokens
from fidelity.cache.simulator import simulated
from fidelity.calibrate import CWD_STANDIN, StepResult, calibrate, load, prompt_text, reply_text, summarize
from fidelity.wire.deepseek import deepseek_v4_prompt, deepseek_v4_texts

# --------------------------------------------------------------------------- cache model (the core's)


def cached(model: CacheModel, earlier: list[PromptTokens], request: PromptTokens) -> int:
    """What calibration predicts: the simulator's read (``simulated``)."""
    read = simulated(model, earlier, request).cache_read
    assert read is not None
    return read


def test_calibrate_uses_the_core_deepseek_model() -> None:
    model = cache.for_provider("deepseek")
    assert (model.name, model.unit) == ("deepseek", 128)


def test_hits_round_down_to_whole_units() -> None:
    model = cache.for_provider("deepseek")
    first = PromptTokens(tokens=tuple(range(300)))
    again = PromptTokens(tokens=tuple(range(300)) + (9999,))
    assert cached(model, [first], again) == 256
    assert cached(model, [], again) == 0


def test_reply_is_cached_after_the_prompt() -> None:
    model = cache.for_provider("deepseek")
    prior = PromptTokens(tokens=tuple(range(200)), output=tuple(range(200, 300)))
    nxt = PromptTokens(tokens=tuple(range(300)) + (7,) * 10)
    assert cached(model, [prior], nxt) == 256
    without_reply = PromptTokens(tokens=tuple(range(200)))
    assert cached(model, [without_reply], nxt) == 128


def test_whole_request_is_not_served_below_a_unit_boundary() -> None:
    model = cache.for_provider("deepseek")
    prior = PromptTokens(tokens=tuple(range(200)))
    p = simulated(model, [prior], PromptTokens(tokens=tuple(range(250))))
    assert (p.cache_read, p.prompt) == (128, 250)
    assert p.cache_read % DEEPSEEK_UNIT == 0


# --------------------------------------------------------------------------- template


def _body(messages: list[dict], tools: list[dict] | None = None) -> dict:
    body: dict = {"model": "deepseek-v4-flash", "messages": messages}
    if tools:
        body["tools"] = tools
    return body


def test_final_answer_reasoning_is_dropped_tool_call_reasoning_kept() -> None:
    call = {"id": "c1", "type": "function", "function": {"name": "f", "arguments": '{"a": 1, "b": "x"}'}}
    messages = [
        {"role": "system", "content": "S"},
        {"role": "user", "content": "u1"},
        {"role": "assistant", "content": None, "reasoning_content": "R1", "tool_calls": [call]},
        {"role": "tool", "tool_call_id": "c1", "content": "out"},
        {"role": "assistant", "content": "done", "reasoning_content": "R2"},
        {"role": "user", "content": "u2"},
    ]
    texts = deepseek_v4_texts(_body(messages))
    assert texts[("message", 2)].startswith("<think>R1</think>")
    assert '<｜DSML｜parameter name="a" string="false">1</｜DSML｜parameter>' in texts[("message", 2)]
    assert texts[("message", 3)] == "<｜User｜><tool_result>out</tool_result><｜Assistant｜>"
    assert texts[("message", 4)] == "</think>done<｜end▁of▁sentence｜>"
    prompt = deepseek_v4_prompt(_body(messages))
    assert prompt.startswith("<｜begin▁of▁sentence｜>S<｜User｜>u1<｜Assistant｜>")
    assert prompt.endswith("<｜User｜>u2<｜Assistant｜><think>")


def test_tools_follow_the_system_text() -> None:
    tool = {"type": "function", "function": {"name": "f", "description": "d", "parameters": {"type": "object"}}}
    prompt = deepseek_v4_prompt(_body([{"role": "system", "content": "S"}, {"role": "user", "content": "u"}], [tool]))
    assert prompt.startswith("<｜begin▁of▁sentence｜>S\n\n## Tools\n")
    assert '{"name": "f", "description": "d", "parameters": {"type": "object"}}\n</functions>\n' in prompt


def test_cwd_stand_in_is_a_calibration_rule_not_a_template_rule() -> None:
    body = _body([{"role": "user", "content": "in {{cwd}}"}])
    assert "{{cwd}}" in deepseek_v4_prompt(body)
    assert prompt_text(body) == deepseek_v4_prompt(body).replace("{{cwd}}", CWD_STANDIN)
    reply = {"role": "assistant", "content": "at {{cwd}}", "reasoning_content": "r"}
    assert reply_text(reply) == "r</think>at " + CWD_STANDIN + "<｜end▁of▁sentence｜>"



def test_deepseek_cache_view_text_is_the_v4_template() -> None:
    """The deepseek dialect's Segment.text is the calibrated V4 framing, in
    cache order; joined it is the prompt without the generation prompt."""
    call = {"id": "c1", "type": "function", "function": {"name": "f", "arguments": '{"a": [1, 2]}'}}
    tool = {"type": "function", "function": {"name": "f", "description": "d", "parameters": {"type": "object"}}}
    messages = [
        {"role": "system", "content": "S"},
        {"role": "user", "content": "u1"},
        {"role": "assistant", "content": "", "reasoning_content": "R1", "tool_calls": [call]},
        {"role": "tool", "tool_call_id": "c1", "content": "out"},
    ]
    body = _body(messages, [tool])
    segs = wire.get("deepseek").cache_view(json.dumps(body).encode())
    assert [s.kind for s in segs] == ["params", "system", "tools", "message", "message", "message"]
    assert "".join(s.text or "" for s in segs[1:]) + "<think>" == deepseek_v4_prompt(body)
    assert segs[4].text.endswith('<｜DSML｜parameter name="a" string="false">[1,2]</｜DSML｜parameter>\n'
                                 "</｜DSML｜invoke>\n</｜DSML｜function_calls><｜end▁of▁sentence｜>")
    assert "tool▁output" not in "".join(s.text or "" for s in segs)  # not the V3.1 framing


def test_bos_goes_to_the_first_message_without_system_or_tools() -> None:
    body = _body([{"role": "user", "content": "u"}])
    texts = deepseek_v4_texts(body)
    assert texts == {("message", 0): "<｜begin▁of▁sentence｜><｜User｜>u<｜Assistant｜>"}
    assert deepseek_v4_prompt(body, thinking=False) == texts[("message", 0)] + "</think>"


def test_summary_figures() -> None:
    def step(real: int, pred: int, anchor: bool = False) -> StepResult:
        return StepResult("s", 1, 1, 1000, real, 1000 + (0 if anchor else 3), pred, anchor, None, 5, 5)

    summary = summarize([step(0, 0, True), step(128, 128), step(256, 384), step(256, 128)])
    assert summary.cached_exact == 0.5
    assert summary.cached_within_unit == 1.0
    assert (summary.over_predicted, summary.under_predicted) == (1, 1)
    assert (summary.prompt_steps, summary.prompt_error_median) == (3, 3.0)


# --------------------------------------------------------------------------- real data


@pytest.fixture(scope="module")
def calibration():
    from tests.conftest import SHARED_REAL

    if not SHARED_REAL.is_dir():
        pytest.skip("../shared/real is absent")
    groups = load(SHARED_REAL / "deepseek-harness")
    return calibrate(groups, tokens.for_model("deepseek-v4-flash"), wire.get("deepseek").render)


def test_real_summary_figures(calibration, shared_real) -> None:
    s = calibration.summary
    assert calibration.cache_model == "deepseek"
    assert s.unit == 128
    assert s.steps == 53 and s.prompt_steps == 33
    assert s.prompt_error_median <= 3
    assert s.prompt_error_p95 <= 29
    assert s.output_error_median == 0
    assert s.cached_exact >= 0.67
    assert s.cached_exact_continuing >= 0.93
    assert s.cached_within_unit >= 0.71
    assert s.over_predicted <= 2


def test_real_cache_reads_are_whole_units(calibration, shared_real) -> None:
    reads = [st.real_cached for sr in calibration.sessions for st in sr.steps if st.real_cached]
    assert reads and all(r % 128 == 0 for r in reads)
    assert any(r % 256 for r in reads)  # so the unit is not 256


def test_real_fork_example(calibration, shared_real) -> None:
    parent = next(s for s in calibration.sessions if s.name == "subagent-fork-in-process/session.jsonl")
    child = next(s for s in calibration.sessions if s.name == "subagent-fork-in-process/session.1.jsonl")
    assert [(st.real_prompt, st.predicted_prompt) for st in parent.steps] == [(2885, 2885), (2974, 2974), (3137, 3137)]
    assert [(st.real_cached, st.predicted_cached) for st in parent.steps] == [(0, 0), (2816, 2816), (3072, 3072)]
    assert [(st.real_cached, st.predicted_cached) for st in child.steps] == [(2816, 2816)]


def test_cli_json(shared_real, capsys) -> None:
    folder = shared_real / "deepseek-harness" / "examples" / "acp-agent" / "tests" / "snapshots" / "subagent-fork-in-process"
    assert cli.main(["calibrate", str(folder), "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert out["summary"]["steps"] == 4
    assert out["summary"]["over_predicted"] == 0


def test_cli_table(shared_real, capsys) -> None:
    folder = shared_real / "deepseek-harness" / "apps" / "web" / "tests" / "snapshots" / "goal-multi-turn-actions"
    assert cli.main(["calibrate", str(folder)]) == 0
    assert "within one unit" in capsys.readouterr().out


def test_cli_no_sessions(tmp_path, capsys) -> None:
    assert cli.main(["calibrate", str(tmp_path)]) == 2
    assert "no session" in capsys.readouterr().err
