"""fidelity scan: log reading, partitions, the stand-in simulator, executors, views."""

from __future__ import annotations

import gzip
import json
import os
import subprocess
import sys
from pathlib import Path

import orjson
import pytest
from hypothesis import strategies as st

from fidelity import wire
from fidelity.cache.items import build_view, encode
from fidelity.formats import json_doc
from fidelity.scan import scan, synthetic
from fidelity.scan.records import parse_record

REPO = Path(__file__).resolve().parents[2]
_T = "2026-11-30T12:{:02d}:{:02d}Z"


def _line(minute: int, second: int, body: dict, session: str, url: str = "https://api.openai.com/v1/chat/completions",
          **extra: object) -> bytes:
    return orjson.dumps({"time": _T.format(minute, second), "url": url, "session": session, "body": body,
                         **extra}) + b"\n"


def _chat(system: str, msgs: list[dict], tools: list[dict] | None = None) -> dict:
    body: dict = {"model": "gpt-4.1", "messages": [{"role": "system", "content": system}, *msgs]}
    if tools is not None:
        body["tools"] = tools
    return body


def _history(n: int) -> list[dict]:
    out = []
    for i in range(n):
        out.append({"role": "user", "content": f"question {i} " + "word " * 300})
        out.append({"role": "assistant", "content": f"answer {i} " + "text " * 300})
    return out


SYSTEM = "You are a careful assistant. " + "Rules follow. " * 400


def test_append_only_session_loses_nothing(tmp_path: Path) -> None:
    log = tmp_path / "a.jsonl"
    log.write_bytes(b"".join(_line(0, i, _chat(SYSTEM, _history(i + 1)), "s1") for i in range(6)))
    r = scan([log], workers=1)
    assert r["totals"]["requests"] == 6
    assert r["totals"]["breaks"] == 0 and r["totals"]["lost_tokens"] == 0
    assert r["totals"]["read_tokens"] > 0.6 * r["totals"]["prompt_tokens"]


def test_timestamp_in_system_prompt_is_named_with_its_cost(tmp_path: Path) -> None:
    # the system prompt is the first cache-view segment: every turn lands in
    # another partition, and the session key links the turns
    lines = [_line(0, i, _chat(f"Current time: 12:00:{i:02d}. " + SYSTEM, _history(i + 1)), "s1") for i in range(5)]
    log = tmp_path / "t.jsonl"
    log.write_bytes(b"".join(lines))
    r = scan([log], workers=1)
    assert r["totals"]["partitions"] == 5
    assert r["totals"]["breaks"] == 4
    top = r["by_cause"][0]
    assert (top["cause"], top["change"]) == ("system_changed", "volatile value (timestamp)")
    assert top["lost_tokens"] > 0 and top["lost_usd"] > 0
    assert r["top_changes"][0]["example"]["child"].endswith(":5")  # the largest loss: the longest history


def test_tool_added_mid_session_breaks_at_the_tools(tmp_path: Path) -> None:
    tools = [{"type": "function", "function": {"name": f"t{i}", "description": "d " * 50, "parameters": {}}}
             for i in range(3)]
    more = tools + [{"type": "function", "function": {"name": "report", "description": "x", "parameters": {}}}]
    lines = [_line(0, i, _chat(SYSTEM, _history(i + 1), tools if i < 3 else more), "s1") for i in range(5)]
    log = tmp_path / "tools.jsonl"
    log.write_bytes(b"".join(lines))
    r = scan([log], workers=1)
    assert r["totals"]["breaks"] == 1
    assert r["by_cause"][0]["cause"] == "tools_changed"
    assert r["by_cause"][0]["change"] == "tool added: report"
    assert r["by_where"][0]["pointer"] == "/tools/*" and r["by_where"][0]["label"] == "report"


def test_bad_lines_are_counted_never_fatal(tmp_path: Path) -> None:
    good = _line(0, 1, _chat(SYSTEM, _history(1)), "s1")
    huge = _line(0, 2, _chat(SYSTEM, [{"role": "user", "content": "x" * 300_000}]), "s2")
    log = tmp_path / "bad.jsonl"
    log.write_bytes(good + good[: len(good) // 2] + b"\n" + b"[1,2]\n"
                    + _line(0, 3, {"foo": 1}, "s3", url="https://example.invalid/x")
                    + huge + b"\n" + good)
    r = scan([log], workers=1, max_line=200_000)
    assert r["totals"]["requests"] == 2
    by = r["bad_lines"]["by_reason"]
    assert by == {"huge body": 1, "not a JSON object": 1, "truncated or invalid JSON": 1, "unknown provider": 1}
    wheres = sorted(e["where"] for e in r["bad_lines"]["examples"])
    assert wheres == [f"{log}:{n}" for n in (2, 3, 4, 5)]


def test_gzip_log_equals_plain(tmp_path: Path) -> None:
    data = b"".join(synthetic.generate(400_000, seed=3))
    plain, packed = tmp_path / "l.jsonl", tmp_path / "l.jsonl.gz"
    plain.write_bytes(data)
    packed.write_bytes(gzip.compress(data))
    a, b = scan([plain], workers=1), scan([packed], workers=1)
    for key in ("totals", "by_model", "by_cause", "by_where", "by_day"):
        assert a[key] == b[key]


def test_snapshot_folder_is_one_session(tmp_path: Path) -> None:
    from fidelity.capture import snapshot

    folder = tmp_path / "snaps"
    for i in range(4):
        body = orjson.dumps(_chat(SYSTEM, _history(i + 1)))
        snapshot.write(folder, snapshot.from_request(method="POST", url="https://api.openai.com/v1/chat/completions",
                                                     headers={}, body=body, seq=i + 1))
    r = scan([folder], workers=1)
    assert r["totals"]["requests"] == 4 and r["totals"]["bad_lines"] == 0
    assert r["totals"]["breaks"] == 0 and r["totals"]["read_tokens"] > 0


def test_local_workers_agree_byte_for_byte(tmp_path: Path) -> None:
    log = tmp_path / "s.jsonl"
    synthetic.write_log(str(log), 1_500_000, seed=5)
    one = json_doc(scan([log], workers=1, chunk_bytes=200_000))
    two = json_doc(scan([log], workers=2, chunk_bytes=200_000))
    assert one == two
    assert json.loads(one)["totals"]["breaks"] > 0


def test_dask_json_equals_local_json(tmp_path: Path) -> None:
    pytest.importorskip("dask")
    log = tmp_path / "s.jsonl"
    synthetic.write_log(str(log), 1_500_000, seed=7)
    with open(log, "ab") as fh:
        fh.write(b'{"time": "2026-11-30T12:00:00Z", "body": {"mod\n')
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    outs = []
    for executor in ("local", "dask"):
        proc = subprocess.run([sys.executable, "-m", "fidelity", "scan", str(log), "--json", "--executor", executor,
                               "--workers", "2"], capture_output=True, env=env, timeout=300)
        assert proc.returncode == 0, proc.stderr.decode()
        outs.append(proc.stdout)
    assert outs[0] == outs[1]
    doc = json.loads(outs[0])
    assert doc["bad_lines"]["total"] == 1 and doc["totals"]["breaks"] > 0


def test_fast_view_matches_the_dialects_cache_view() -> None:
    bodies: list[tuple[str, bytes]] = []
    for line in synthetic.generate(300_000, seed=3):  # 26 bodies, all three dialects
        rec = parse_record(line)
        bodies.append((rec.dialect.name, orjson.dumps(rec.body)))
    generated = len(bodies)
    real = Path(__file__).resolve().parents[3] / "shared" / "real" / "cassettes"
    if real.is_dir():
        from fidelity.capture.importers import import_file

        for p in sorted(real.rglob("*.yaml"))[:40]:
            for snap in import_file(p).snapshots:
                if snap.provider:
                    bodies.append((snap.provider, snap.body))
        assert len(bodies) - generated > 25  # recorded bodies were read
    checked = 0
    for name, body in bodies:
        d = wire.get(name)
        exact = [s for s in d.cache_view(body) if s.kind != "params"]
        fast = build_view(d, orjson.loads(body))
        assert [(s.kind, s.index, s.pointer) for s in exact] == [(i.kind, i.index, i.pointer) for i in fast.items]
        if name != "anthropic-messages":  # string content is a text block there (see view._blocks)
            assert [orjson.loads(s.data) for s in exact] == [orjson.loads(x) for x in encode(fast.items, normalise=fast.normalise)]
        checked += 1
    # every body was compared, the generated ones in all three dialects
    assert checked == len(bodies) and generated > 20
    assert {name for name, _ in bodies[:generated]} == {"openai-chat", "anthropic-messages", "deepseek"}


def test_predicted_hit_rate_tracks_reported_usage_on_recorded_traffic(shared_real: Path) -> None:
    d = shared_real / "recorded-usage" / "mirascope" / "python" / "tests" / "e2e" / "input" / "cassettes" \
        / "test_caching_multi_turn_conversation"
    r = scan([d / "openai_gpt_4o_completions.yaml", d / "anthropic_claude_sonnet_4_0.yaml"], workers=1)
    rep = {m["model"]: m["reported"] for m in r["by_model"]}
    # recorded: gpt-4o reads 0 / 3,072 / 3,840; claude-sonnet-4-0 reads 0 / 0 / 4,597
    assert rep["gpt-4o"]["reported_read"] == 6912 and rep["claude-sonnet-4-0"]["reported_read"] == 4597
    for usage in rep.values():
        assert usage["predicted_read"] > 0
        assert abs(usage["predicted_hit_rate"] - usage["reported_hit_rate"]) < 0.05


def test_cli_formats_and_errors(tmp_path: Path) -> None:
    log = tmp_path / "t.jsonl"
    log.write_bytes(b"".join(_line(0, i, _chat(f"Now 12:00:{i:02d}. " + SYSTEM, _history(i + 1)), "s")
                             for i in range(3)))
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    run = lambda *a: subprocess.run([sys.executable, "-m", "fidelity", "scan", *a], capture_output=True,
                                    env=env, timeout=120)
    gh = run(str(log), "--format", "github", "--workers", "1", "--out", str(tmp_path / "out"))
    assert gh.returncode == 0 and b"::warning file=" in gh.stdout
    assert (tmp_path / "out" / "scan.json").is_file() and (tmp_path / "out" / "scan.html").is_file()
    pair = sorted((tmp_path / "out" / "examples").iterdir())
    assert [p.name for p in pair] == ["01-child.snapshot", "01-parent.snapshot"]
    diff = subprocess.run([sys.executable, "-m", "fidelity", "diff", str(pair[1]), str(pair[0]), "--json"],
                          capture_output=True, env=env, timeout=120)
    assert json.loads(diff.stdout)["cause"]["kind"] == "system_changed"
    missing = run(str(tmp_path / "nope.jsonl"))
    assert missing.returncode == 2 and missing.stderr.count(b"\n") == 1 and b"Traceback" not in missing.stderr


# -- the stand-in simulator against brute force ---------------------------------------

_segment = st.lists(st.integers(0, 3), min_size=1, max_size=4)


def test_a_large_partition_splits_at_gaps_longer_than_the_cache_lifetime(tmp_path: Path) -> None:
    # two bursts of one conversation head, 2 hours apart (OpenAI entries live 10 minutes)
    lines = [_line(0, i, _chat(SYSTEM, _history(i + 1)), "a") for i in range(3)]
    lines += [orjson.dumps({"time": f"2026-11-30T14:00:{i:02d}Z", "url": "https://api.openai.com/v1/chat/completions",
                            "session": "b", "body": _chat(SYSTEM, _history(i + 1))}) + b"\n" for i in range(3)]
    log = tmp_path / "gap.jsonl"
    log.write_bytes(b"".join(lines))
    whole, split = scan([log], workers=1), scan([log], workers=1, split_bytes=1)
    assert (whole["totals"]["partitions"], split["totals"]["partitions"]) == (1, 2)
    for key in ("read_tokens", "written_tokens", "lost_tokens", "breaks"):
        assert whole["totals"][key] == split["totals"][key]
    # the second burst starts cold: its first request reads nothing
    assert whole["by_day"][0]["read_tokens"] < whole["totals"]["prompt_tokens"]


def test_what_an_importer_skips_is_counted(shared_real: Path) -> None:
    log = shared_real / "deepseek-harness" / "examples" / "jsonrpc-agent" / "tests" / "snapshots" / "bash-tool" \
        / "session.jsonl"
    r = scan([log], workers=1)
    assert r["bad_lines"]["by_reason"].get("skipped by the importer", 0) >= 1
    assert all(e["where"].startswith(f"{log}#request:") for e in r["bad_lines"]["examples"])


def test_claude_trace_envelope_with_streamed_usage(tmp_path: Path) -> None:
    body = {"model": "claude-sonnet-4-5", "max_tokens": 100, "system": SYSTEM,
            "messages": [{"role": "user", "content": "hello " * 50}]}
    sse = ('event: message_start\ndata: {"type":"message_start","message":{"usage":{"input_tokens":20,'
           '"cache_read_input_tokens":1500,"cache_creation_input_tokens":0,"output_tokens":1}}}\n\n')
    line = orjson.dumps({"request": {"timestamp": 1764504000.5, "method": "POST",
                                     "url": "https://api.anthropic.com/v1/messages",
                                     "headers": {"authorization": "Bearer sk-ant-secret"}, "body": body},
                         "response": {"status_code": 200, "body_raw": sse},
                         "logged_at": "2025-11-30T12:00:00.500Z"}) + b"\n"
    log = tmp_path / "trace.jsonl"
    log.write_bytes(line)
    r = scan([log], workers=1)
    assert r["totals"]["requests"] == 1 and r["by_day"][0]["day"] == "2025-11-30"
    assert r["reported"]["reported_read"] == 1500 and r["reported"]["reported_prompt"] == 1520


def test_two_partitions_replayed_in_one_task_keep_their_own_causes(tmp_path: Path) -> None:
    # segment ids are numbered per partition: two partitions of one task whose
    # breaks sit at the same ids must not share a classification (with
    # workers=1, the two smallest of five partitions share the fourth task)
    def conv(name: str, before: str, after: str, words: int) -> list[bytes]:
        system = f"You are agent {name}. " + "Rules follow. " * words
        u0 = {"role": "user", "content": "question 0 " + "word " * 300}
        a0 = {"role": "assistant", "content": "answer 0 " + "text " * 300 + before}
        e0 = {**a0, "content": "answer 0 " + "text " * 300 + after}
        u1 = {"role": "user", "content": "question 1 " + "word " * 300}
        return [_line(0, 0, _chat(system, [u0, a0, u1]), name),
                _line(0, 1, _chat(system, [u0, e0, u1, {"role": "assistant", "content": "answer 1"},
                                           {"role": "user", "content": "q2"}]), name)]

    fillers = [line for i in range(3) for line in conv(f"F{i}", "x", "x", 3000 + 500 * i)]
    a = conv("A", "at 12:00:00", "at 12:05:00", 400)
    b = conv("B", "run 123e4567-e89b-12d3-a456-426614174000", "run 9b2c4567-e89b-12d3-a456-426614174999", 401)
    log = tmp_path / "five.jsonl"
    log.write_bytes(b"".join(fillers + a + b))
    r = scan([log], workers=1)
    assert r["totals"]["partitions"] == 5
    assert sorted(c["change"] for c in r["by_cause"]) == ["volatile value (UUID)", "volatile value (timestamp)"]


def test_a_deepseek_harness_folder_is_read_once(shared_real: Path) -> None:
    # the importer reads a session file with its siblings (parent and children):
    # the folder, or both of its files, give its four requests once, not twice
    folder = shared_real / "deepseek-harness" / "examples" / "acp-agent" / "tests" / "snapshots" \
        / "subagent-fork-in-process"
    from fidelity.capture.importers import import_file

    n = len(import_file(folder / "session.jsonl", "dsh").snapshots)
    assert n == 4
    for paths in ([folder], [folder / "session.jsonl", folder / "session.1.jsonl"], [folder / "session.1.jsonl"]):
        assert scan(paths, workers=1)["totals"]["requests"] == n


def test_a_log_given_twice_is_read_once(tmp_path: Path) -> None:
    log = tmp_path / "a.jsonl"
    log.write_bytes(b"".join(_line(0, i, _chat(SYSTEM, _history(i + 1)), "s1") for i in range(3)))
    once = scan([log], workers=1)
    assert once["totals"]["requests"] == 3
    for paths in ([log, log], [tmp_path, log], [log, tmp_path / "." / "a.jsonl"]):
        again = scan(paths, workers=1)
        assert again["totals"] == once["totals"] and again["by_cause"] == once["by_cause"]
