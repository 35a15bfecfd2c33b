"""fidelity replay: recorded traffic against reported usage (real data
under ../shared/real, skipped when absent), and diff FOLDER pairing by the
simulated cache."""

from __future__ import annotations

import json
import subprocess
import sys
from dataclasses import replace
from pathlib import Path

from fidelity import replay as R
from fidelity.capture import snapshot
from fidelity.traffic.usage import from_response

MULTI_TURN = ("recorded-usage/mirascope/python/tests/e2e/input/cassettes/"
              "test_caching_multi_turn_conversation/anthropic_claude_sonnet_4_0.yaml")


def test_multi_turn_reads_what_the_moved_breakpoint_wrote(shared_real: Path) -> None:
    rows = R.replay_recording(R.read_recordings(shared_real / MULTI_TURN)[0], scale_to_reported=True)
    assert [r.reported.cache_read for r in rows] == [0, 0, 4597]
    assert rows[2].predicted is not None and rows[2].predicted.parent == "anthropic_claude_sonnet_4_0.yaml#1"
    assert abs(rows[2].predicted.cache_read - 4597) <= 0.05 * 4597
    assert not rows[2].warm_outside


def test_recorded_usage_figures(shared_real: Path) -> None:
    res = R.replay(shared_real / "recorded-usage")
    a = res.summary["anthropic"]
    # 12 Bedrock-routed Anthropic bodies since issue 11; 4 file uploads to Anthropic's API, filed
    # under Anthropic by their URL and set apart as not generation requests (issue 29)
    assert a["requests"] == 89 and a["estimated_tokens"]
    assert a["set_apart"]["not a generation request: multipart upload"] == 4
    assert a["scaled_to_reported_prompt"]["hit_miss_agree"] == 1.0
    # billed ids (calibrated estimate), server-tool requests shown apart
    assert a["hit_miss_agree"] == 1.0 and a["server_tools"] > 0
    assert a["scaled_to_reported_prompt"]["read_within_5pct"] >= 0.9
    # 19 requests to OpenRouter and DeepSeek's /responses are those caches' (by URL)
    assert res.summary["openai"]["requests"] == 70
    assert res.summary["openrouter"]["requests"] == 11 and res.summary["deepseek"]["server_template"] == 8
    assert res.summary["openai"]["prompt_rel_error_median"] <= 0.001  # OpenAI framing: exact counts
    j = res.to_json()
    assert set(j) == {"requests", "summary"}
    row = j["requests"][0]
    assert set(row) == {"source", "index", "provider", "model", "reported", "predicted", "warm_outside", "apart"}
    assert set(j["summary"]["openai"]["repeats"]) == {"rows", "reported_hits"}
    assert set(row["reported"]) == {"prompt", "cache_read", "cache_write"}


def test_from_response_anthropic_sse_and_gzip() -> None:
    import gzip
    sse = (b'event: message_start\ndata: {"type":"message_start","message":{"usage":{"input_tokens":4,'
           b'"cache_read_input_tokens":4597,"cache_creation_input_tokens":598,"output_tokens":1}}}\n\n'
           b'event: message_delta\ndata: {"type":"message_delta","usage":{"output_tokens":42}}\n\n')
    u = from_response("anthropic-messages", "text/event-stream", sse)
    assert u == {"prompt": 5199, "cache_read": 4597, "cache_write": 598, "output": 42, "source": "sse"}
    body = gzip.compress(b'{"usage":{"prompt_tokens":3806,"prompt_tokens_details":{"cached_tokens":3072},'
                         b'"completion_tokens":5}}')
    assert from_response("openai-chat", "application/json", body)["cache_read"] == 3072


def _snap(folder: Path, name: str, seq: int, time: str, body: bytes) -> None:
    snap = snapshot.Snapshot(body=body, seq=seq, provider="openai-chat", family="openai", model="gpt-4o")
    meta = snap.metadata()
    meta["time"] = time
    (folder / name).write_bytes(json.dumps(meta, separators=(",", ":")).encode() + b"\n" + body)


def _chat(text: str) -> bytes:
    return json.dumps({"messages": [{"role": "user", "content": text}], "model": "gpt-4o"},
                      separators=(",", ":")).encode()


def test_diff_folder_pairs_by_what_the_cache_reads(tmp_path: Path) -> None:
    """Interleaved agents: each child is compared with the request it reads
    from, whatever the file names and seq numbers say."""
    a = "alpha " * 1500
    b = "bravo " * 1500
    _snap(tmp_path, "0001-x.snapshot", 1, "2026-11-30T12:00:03Z", _chat(a + "two"))
    _snap(tmp_path, "0002-x.snapshot", 2, "2026-11-30T12:00:00Z", _chat(a + "one"))
    _snap(tmp_path, "0003-x.snapshot", 3, "2026-11-30T12:00:01Z", _chat(b + "one"))
    _snap(tmp_path, "0004-x.snapshot", 4, "2026-11-30T12:00:02Z", _chat(b + "two"))
    env = {"PYTHONPATH": str(Path(__file__).resolve().parents[2])}
    out = subprocess.run([sys.executable, "-m", "fidelity", "diff", str(tmp_path), "--json"],
                         capture_output=True, env=env, check=True).stdout
    pairs = {Path(p["pair"]["child"]).name: (Path(p["pair"]["parent"]).name, p["pair"]["how"])
             for p in json.loads(out)}
    assert pairs == {"0003-x.snapshot": ("0002-x.snapshot", "nearest"),
                     "0004-x.snapshot": ("0003-x.snapshot", "reads"),
                     "0001-x.snapshot": ("0002-x.snapshot", "reads")}


def test_cli_bad_path(tmp_path: Path) -> None:
    env = {"PYTHONPATH": str(Path(__file__).resolve().parents[2])}
    proc = subprocess.run([sys.executable, "-m", "fidelity", "replay", str(tmp_path / "nope")],
                          capture_output=True, env=env, text=True)
    assert proc.returncode == 2
    assert proc.stderr.strip().count("\n") == 0 and "no such file or folder" in proc.stderr


def test_deepseek_split_held_out_beside_fitted(shared_real: Path) -> None:
    from fidelity.calibrate import load
    from fidelity.deepseek_split import part_of, split_figures

    assert part_of("subagent-fork-in-process") in ("fit", "held_out")
    fig = split_figures(load(shared_real / "deepseek-harness"))
    assert fig.unit == 128  # re-derived on the fit part alone
    assert fig.fit_scenarios and fig.held_out_scenarios and fig.held_out_requests >= 10
    assert fig.held_out_exact is not None and fig.held_out_exact >= 0.85


def test_docs_example_runs() -> None:
    text = (Path(__file__).resolve().parents[2] / "docs" / "replay.md").read_text()
    code = text.split("```python\n", 1)[1].split("```", 1)[0]
    exec(compile(code, "docs/replay.md", "exec"), {})  # noqa: S102 -- the documented example, as written


def test_server_tools_detected() -> None:
    from fidelity.traffic.apart import exchange

    def apart(body: bytes) -> str | None:
        return exchange("x", 0, body, url="https://api.anthropic.com/v1/messages").apart

    assert apart(b'{"model":"m","messages":[],"tools":[{"type":"web_search_20250305","name":"web_search"}]}') \
        == "server tools"
    assert apart(b'{"model":"m","input":[{"type":"web_search_call","id":"ws_1"}]}') == "server tools"
    assert apart(b'{"model":"m","messages":[],"tools":[{"name":"get_weather","input_schema":{}}]}') is None
    assert apart(b'{"model":"m","messages":[],"tools":[{"type":"function","name":"web_search_helper"}]}') is None


def test_rows_filed_under_the_cache_the_url_reaches(shared_real: Path) -> None:
    """An OpenAI-shaped body sent to DeepSeek's /responses or to OpenRouter
    is that provider's cache, not OpenAI's; DeepSeek's template is shown apart."""
    ds = shared_real / ("recorded-usage/pydantic-ai/tests/models/cassettes/test_deepseek_responses/"
                        "test_deepseek_responses[function_tool].yaml")
    rows = R.replay_recording(R.read_recordings(ds)[0])
    assert [r.provider for r in rows] == ["deepseek", "deepseek"]
    assert [r.apart for r in rows] == ["server template", "server template"]
    assert not any(r.warm_outside for r in rows)  # apart rows are not anchors
    orr = shared_real / ("recorded-usage/pydantic-ai/tests/models/openrouter/cassettes/test_cache/"
                         "test_openrouter_cache_messages_anthropic_real_api.yaml")
    assert {r.provider for r in R.replay_recording(R.read_recordings(orr)[0])} == {"openrouter"}


def test_repeats_counted(tmp_path: Path) -> None:
    """A prompt sent again is a repeat of the request it reads from; the
    summary counts repeats and how many the provider reported a read for."""
    a = "alpha " * 1500
    _snap(tmp_path, "0001.snapshot", 1, "2026-11-30T12:00:00Z", _chat(a))
    _snap(tmp_path, "0002.snapshot", 2, "2026-11-30T12:00:05Z", _chat(a))
    _snap(tmp_path, "0003.snapshot", 3, "2026-11-30T12:00:09Z", _chat(a + "more"))
    rows = R.replay_recording(R.read_recordings(tmp_path)[0])
    assert [r.repeat for r in rows] == [False, True, False]
    assert rows[1].predicted is not None and rows[1].predicted.parent == "0001.snapshot#0"
    s = R.summarize([replace(r, reported=R.Usage(r.reported.prompt, c, None)) for r, c in zip(rows, (0, 0, 1024))])
    assert s["openai"]["repeats"] == {"rows": 1, "reported_hits": 0}


def test_a_read_after_every_entry_expired_came_from_outside() -> None:
    """A cassette recorded again a year on (the openllmetry prompt-caching
    cassettes are: 2025 and 2026 runs in one file): the second run's first
    read cannot come from what the first run wrote, whatever the two runs'
    whitespace, so it is warm from outside and left out of the figures; a
    read within the day is the recording's own."""
    from fidelity.traffic.apart import exchange

    system = "You summarise. " * 400
    spaced = json.dumps({"messages": [{"role": "system", "content": system}, {"role": "user", "content": "a"}],
                         "model": "gpt-4o-mini"}).encode()
    compact = json.dumps(json.loads(spaced), separators=(",", ":")).encode()
    url = "https://api.openai.com/v1/chat/completions"

    def rows(gap: float) -> list[R.Row]:
        ex = [exchange("c.yaml", i, body, url=url, time=t, usage={"prompt": 1150, "cache_read": read})
              for i, (body, t, read) in enumerate([(spaced, 0.0, 0), (spaced, 6.0, 1024),
                                                   (compact, 6.0 + gap, 1024), (compact, 12.0 + gap, 1024)])]
        return R.replay_recording(ex)

    later = rows(365 * 86400.0)
    reads = [r.predicted.cache_read if r.predicted else None for r in later]
    assert reads[0] == reads[2] == 0 and reads[1] > 0  # the year-old entries are gone
    assert [r.warm_outside for r in later] == [False, False, True, False]
    soon = rows(600.0)  # ten minutes on: OpenAI's entry may have gone, but nothing outside explains the read
    assert not any(r.warm_outside for r in soon)


def test_deepseek_harness_logs_are_read_once(shared_real, monkeypatch) -> None:
    """The DeepSeek Harness rows and their split figures come from one read of the logs."""
    from fidelity import calibrate as calibrate_mod
    from fidelity.replay import replay as run_replay

    folder = shared_real / "deepseek-harness" / "examples" / "acp-agent" / "tests" / "snapshots" / "subagent-fork-in-process"
    loads: list[object] = []
    real_load = calibrate_mod.load

    def counted(path):
        loads.append(path)
        return real_load(path)

    monkeypatch.setattr(calibrate_mod, "load", counted)
    result = run_replay(folder)
    assert len(loads) == 1
    assert any(r.provider == "deepseek" for r in result.rows) and "harness_split" in result.summary["deepseek"]
