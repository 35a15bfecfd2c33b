"""Real traffic features on small synthetic inputs: evidence-weighing
detection, non-generation calls skipped with reasons, gzip / parsed_body /
claude-trace imports with usage and time, placeholder-aware redaction,
atomic imports, folders that keep going, and the model from body, metadata
or URL."""

from __future__ import annotations

import gzip
import json
import zlib
from pathlib import Path

import pytest
import yaml

from fidelity import wire
from fidelity.canonical import request_from_json, request_to_json
from fidelity.capture import snapshot
from fidelity.capture.classify import classify
from fidelity.capture.importers import import_file, write_imported
from fidelity.capture.redact import is_placeholder
from fidelity.cli import main as cli_main
from fidelity.errors import InputError
from fidelity.traffic.usage import decode_body, from_response
from fidelity.wire.evidence import detect_request

ANTHROPIC_BODY = {"max_tokens": 100, "messages": [{"role": "user", "content": [
    {"type": "text", "text": "hi", "cache_control": {"type": "ephemeral"}}]}], "model": "claude-sonnet-4-5",
    "thinking": {"type": "enabled", "budget_tokens": 1024}}
CHAT = {"model": "gpt-4o", "messages": [{"role": "user", "content": "hello"}]}
GEMINI = {"contents": [{"role": "user", "parts": [{"text": "hello"}]}]}


def _b(obj: object) -> bytes:
    return json.dumps(obj, separators=(",", ":")).encode()


# -- detection -----------------------------------------------------------------------


def test_anthropic_marks_beat_dashscope_and_deepseek_body_marks() -> None:
    # cache_control on a block (a DashScope mark) and top-level thinking (a DeepSeek mark)
    found = detect_request(ANTHROPIC_BODY)
    assert (found.dialect, found.family) == ("anthropic-messages", "anthropic")
    assert wire.detect(ANTHROPIC_BODY).name == "anthropic-messages"


@pytest.mark.parametrize("url,dialect,family,model", [
    ("https://api.anthropic.com/v1/messages?beta=true", "anthropic-messages", "anthropic", "claude-sonnet-4-5"),
    ("https://bedrock-runtime.us-east-1.amazonaws.com/model/us.anthropic.claude-sonnet-4-5-v1%3A0/invoke",
     "anthropic-messages", "anthropic", "us.anthropic.claude-sonnet-4-5-v1:0"),
    ("https://us-east5-aiplatform.googleapis.com/v1/projects/p/locations/us-east5/publishers/anthropic/models/"
     "claude-sonnet-4-5@20250929:streamRawPredict", "anthropic-messages", "anthropic", "claude-sonnet-4-5@20250929"),
    ("https://bedrock-runtime.eu-west-1.amazonaws.com/model/amazon.nova-lite-v1%3A0/converse", "bedrock-converse",
     "bedrock", "amazon.nova-lite-v1:0"),
])
def test_anthropic_platform_urls(url: str, dialect: str, family: str, model: str) -> None:
    body = {k: v for k, v in ANTHROPIC_BODY.items() if k != "model"}
    if "api.anthropic.com" in url:
        body = ANTHROPIC_BODY
    else:
        body = {"anthropic_version": "bedrock-2023-05-31", **body}
    found = detect_request(body, url=url)
    assert (found.dialect, found.family, found.model) == (dialect, family, model)
    assert found.supported == (dialect != "bedrock-converse")
    if found.supported:  # the model lives in the URL; the round trip does not add one to the body
        d = wire.get(dialect)
        raw = _b(body)
        req = d.parse(raw, model=found.model)
        assert req.route.model == model and d.render(req) == raw


def test_azure_deployment_is_the_model_and_openrouter_is_named() -> None:
    body = {"messages": [{"role": "user", "content": "x"}]}
    found = detect_request(body, url="https://r.openai.azure.com/openai/deployments/prod-4o/chat/completions?api-version=1")
    assert (found.dialect, found.family, found.model) == ("openai-chat", "openai", "prod-4o")
    found = detect_request(CHAT, url="https://openrouter.ai/api/v1/chat/completions")
    assert (found.dialect, found.family) == ("openai-chat", "openrouter")
    found = detect_request(CHAT, url="https://dashscope.aliyuncs.com/compatible-mode/v1/chat/completions")
    assert (found.dialect, found.family) == ("dashscope", "dashscope")


def test_conflicts_are_explained_and_provider_overrides() -> None:
    found = detect_request({"system": "s", **CHAT}, url="https://api.openai.com/v1/chat/completions")
    assert found.dialect == "anthropic-messages" and "Anthropic-only marks (top-level system)" in found.conflict
    found = detect_request(GEMINI, url="https://api.openai.com/v1/chat/completions")
    assert found.dialect == "gemini" and "not a request of that shape" in found.conflict
    found = detect_request(CHAT, url="https://api.deepseek.com/chat/completions", override="openai-chat")
    assert found.dialect == "openai-chat" and found.conflict and "--provider openai-chat wins" in found.conflict
    assert detect_request(CHAT, meta_dialect="vllm").dialect == "vllm"


# -- non-generation calls ----------------------------------------------------------------


@pytest.mark.parametrize("method,url,body,reason", [
    ("POST", "https://api.openai.com/v1/embeddings", b'{"model":"m","input":"x"}', "embeddings"),
    ("POST", "https://generativelanguage.googleapis.com/v1beta/models/gemini-embedding-001:batchEmbedContents",
     b'{"requests":[]}', "embeddings"),
    ("POST", "https://api.openai.com/v1/moderations", b'{"input":"x"}', "moderation"),
    ("POST", "https://api.anthropic.com/v1/messages/count_tokens", _b(ANTHROPIC_BODY), "token counting"),
    ("POST", "https://api.anthropic.com/v1/files", b"--boundary\r\nContent-Disposition: form-data", "multipart upload"),
    ("GET", "https://api.openai.com/v1/models", b"", "GET request (no model request body)"),
    ("POST", "https://us.i.posthog.com/batch", b'{"batch":[]}', "telemetry"),
])
def test_non_generation_calls_have_reasons(method: str, url: str, body: bytes, reason: str) -> None:
    c = classify(method, url, {}, body)
    assert not c.generation and c.reason == reason


# -- importers ---------------------------------------------------------------------------


def _cassette(interactions: list[dict]) -> str:
    return yaml.safe_dump({"version": 1, "interactions": interactions})


def _inter(body: object, uri: str, *, headers: dict | None = None, response: dict | None = None,
           parsed: bool = False) -> dict:
    req: dict = {"method": "POST", "uri": uri, "headers": headers or {}}
    if parsed:
        req["parsed_body"] = body
        req["body"] = None
    else:
        req["body"] = body
    return {"request": req, "response": response or {"status": {"code": 200}, "headers": {}, "body": {"string": ""}}}


def test_parsed_body_gzip_file_gzip_response_and_reasons(tmp_path: Path) -> None:
    usage = {"input_tokens": 5, "cache_read_input_tokens": 4000, "cache_creation_input_tokens": 10, "output_tokens": 3}
    gz_response = {"status": {"code": 200}, "headers": {"Content-Encoding": ["gzip"], "Content-Type": ["application/json"],
                                                          "Date": ["Tue, 01 Dec 2026 10:00:00 GMT"]},
                   "body": {"string": gzip.compress(json.dumps({"usage": usage}).encode())}}
    text = _cassette([
        _inter(ANTHROPIC_BODY, "https://api.anthropic.com/v1/messages", parsed=True, response=gz_response),
        _inter('{"model":"text-embedding-3-small","input":"x"}', "https://api.openai.com/v1/embeddings"),
        _inter(None, "https://api.openai.com/v1/models"),
    ])
    src = tmp_path / "c.yaml.gz"
    src.write_bytes(gzip.compress(text.encode()))
    imp = import_file(src)
    assert len(imp.snapshots) == 1 and imp.reasons == {"embeddings": 1, "no request body": 1}
    snap = imp.snapshots[0]
    assert not snap.body_exact and any("parsed_body" in n for n in snap.notes)
    assert snap.usage == {"prompt": 4015, "cache_read": 4000, "cache_write": 10, "output": 3, "source": "json"}
    assert snap.time == "2026-12-01T10:00:00.000Z"
    assert "embeddings: 1" in imp.summary()
    written = snapshot.read(write_imported(imp, tmp_path / "out")[0])
    assert written.usage == snap.usage and written.metadata()["body_exact"] is False


def test_gzip_and_deflate_request_bodies_are_decoded(tmp_path: Path) -> None:
    raw = _b(CHAT)
    for coding, data in (("gzip", gzip.compress(raw)), ("deflate", zlib.compress(raw))):
        src = tmp_path / f"{coding}.yaml"
        src.write_text(_cassette([_inter(data, "https://api.openai.com/v1/chat/completions",
                                         headers={"Content-Encoding": [coding]})]))
        snap = import_file(src).snapshots[0]
        assert snap.body == raw and snap.provider == "openai-chat"
    with pytest.raises(InputError, match="not valid gzip"):
        decode_body(b"\x1f\x8bnot gzip", "gzip")


def test_claude_trace_jsonl(tmp_path: Path) -> None:
    sse = ("event: message_start\ndata: " + json.dumps({"type": "message_start", "message": {"usage": {
        "input_tokens": 3, "cache_read_input_tokens": 900, "cache_creation_input_tokens": 50, "output_tokens": 1}}})
        + "\n\nevent: message_delta\ndata: " + json.dumps({"type": "message_delta", "usage": {"output_tokens": 42}})
        + "\n\n")
    line = {"request": {"timestamp": 1764583200.5, "method": "POST", "url": "https://api.anthropic.com/v1/messages",
                        "headers": {"x-api-key": "sk-ant-api03-REALSECRETVALUE123"}, "body": ANTHROPIC_BODY},
            "response": {"timestamp": 1764583201.0, "status_code": 200,
                         "headers": {"content-type": "text/event-stream"}, "body_raw": sse},
            "logged_at": "2025-12-01T10:00:01Z"}
    count = {"request": {"timestamp": 1.0, "method": "POST", "url": "https://api.anthropic.com/v1/messages/count_tokens",
                         "headers": {}, "body": ANTHROPIC_BODY}, "response": {}}
    src = tmp_path / "log.jsonl.gz"
    src.write_bytes(gzip.compress((json.dumps(line) + "\n" + json.dumps(count) + "\n").encode()))
    imp = import_file(src)
    assert imp.reasons == {"token counting": 1}
    snap = imp.snapshots[0]
    assert snap.provider == "anthropic-messages" and snap.time == "2025-12-01T10:00:00.500Z"
    assert snap.usage == {"prompt": 953, "cache_read": 900, "cache_write": 50, "output": 42, "source": "sse"}
    out = tmp_path / "out"
    write_imported(imp, out)
    assert b"REALSECRETVALUE" not in next(out.iterdir()).read_bytes()


def test_placeholders_are_safe_and_import_is_atomic(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    for v in ("REDACTED", "[REDACTED]", "***", "<redacted>", "Bearer REDACTED", "sk-***"):
        assert is_placeholder(v)
    assert not is_placeholder("sk-live-1234567890abcdef")
    src = tmp_path / "c.yaml"
    src.write_text(_cassette([_inter(_b({**CHAT, "user": "REDACTED"}), "https://api.openai.com/v1/chat/completions",
                                     headers={"Authorization": ["Bearer REDACTED"], "Cookie": ["__cf_bm=REDACTED"]})] * 3))
    out = tmp_path / "out"
    assert len(write_imported(import_file(src), out)) == 3
    # a failing write leaves nothing of this source behind
    import fidelity.capture.importers._base as base

    calls = {"n": 0}
    real = base.atomic_write

    def flaky(path: Path, data: bytes) -> None:
        calls["n"] += 1
        if calls["n"] == 2:
            raise OSError("disk full")
        real(path, data)

    monkeypatch.setattr(base, "atomic_write", flaky)
    before = sorted(p.name for p in out.iterdir())
    with pytest.raises(OSError):
        write_imported(import_file(src), out)
    assert sorted(p.name for p in out.iterdir()) == before


def test_usage_readers() -> None:
    chat = {"usage": {"prompt_tokens": 3652, "completion_tokens": 9, "prompt_tokens_details": {"cached_tokens": 3072}}}
    assert from_response("openai", "application/json", _b(chat)) == {
        "prompt": 3652, "cache_read": 3072, "cache_write": None, "output": 9, "source": "json"}
    ds = {"usage": {"prompt_tokens": 100, "prompt_cache_hit_tokens": 64, "prompt_cache_miss_tokens": 36}}
    assert from_response("deepseek", None, _b(ds))["cache_read"] == 64
    done = {"type": "response.completed", "response": {"usage": {"input_tokens": 50, "output_tokens": 2,
                                                                  "input_tokens_details": {"cached_tokens": 0}}}}
    sse = b"event: response.created\ndata: {\"type\":\"response.created\",\"response\":{\"usage\":null}}\n\n" \
          b"event: response.completed\ndata: " + _b(done) + b"\n\n"
    assert from_response("openai-responses", "text/event-stream", sse)["prompt"] == 50
    gem = [{"candidates": []}, {"usageMetadata": {"promptTokenCount": 10, "cachedContentTokenCount": 8,
                                                  "candidatesTokenCount": 2, "thoughtsTokenCount": 5}}]
    assert from_response("gemini", "application/json", _b(gem)) == {
        "prompt": 10, "cache_read": 8, "cache_write": None, "output": 7, "source": "sse"}
    bedrock = {"usage": {"inputTokens": 433, "outputTokens": 16, "cacheReadInputTokens": 2752, "cacheWriteInputTokens": 0}}
    assert from_response("bedrock", None, _b(bedrock))["prompt"] == 3185
    assert from_response("openai", None, b"not json") is None


# -- commands -----------------------------------------------------------------------------


def _snap(folder: Path, seq: int, url: str, body: bytes, model: str | None = None) -> Path:
    s = snapshot.from_request(method="POST", url=url, headers={}, body=body, seq=seq)
    if model is not None:
        s = snapshot.Snapshot(**{**s.__dict__, "model": model})
    return snapshot.write(folder, s)


def test_folder_diff_and_gate_keep_going(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    gem_url = "https://generativelanguage.googleapis.com/v1beta/models/gemini-2.5-flash:generateContent"
    child = {"contents": GEMINI["contents"] + [{"role": "model", "parts": [{"text": "ok"}]}]}
    _snap(tmp_path, 1, gem_url, _b(GEMINI))
    _snap(tmp_path, 2, gem_url, _b(child))
    _snap(tmp_path, 3, "https://api.openai.com/v1/embeddings", b'{"model":"text-embedding-3-small","input":"x"}')
    _snap(tmp_path, 4, "https://bedrock-runtime.us-east-1.amazonaws.com/model/amazon.nova-lite-v1%3A0/converse",
          b'{"messages":[{"role":"user","content":[{"text":"x"}]}]}')
    assert cli_main(["diff", str(tmp_path), "--json"]) == 0
    out = capsys.readouterr()
    results = json.loads(out.out)
    assert len(results) == 1 and results[0]["model"] == "gemini-2.5-flash"  # the model from the URL
    # requests are paired by what the simulated cache reads; each request
    # fidelity cannot compare is counted once, by reason
    assert "pair(s) not compared" in out.err and "embeddings: 1" in out.err
    assert "unsupported API (bedrock-converse): 1" in out.err
    base = tmp_path / "b.json"
    assert cli_main(["gate", "--snapshots", str(tmp_path), "--baseline", str(base), "--update-baseline",
                     "--config", str(tmp_path / "none.toml"), "--model", "gemini-2.5-pro"]) == 0
    err = capsys.readouterr().err
    assert "pair(s) not compared" in err and "embeddings: 1" in err and "bedrock-converse): 1" in err


def test_fork_accepts_a_snapshot_and_takes_its_model(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = _snap(tmp_path, 1, "https://r.openai.azure.com/openai/deployments/prod-4o/chat/completions",
                 _b({"messages": [{"role": "user", "content": "hi"}]}), model="prod-4o")
    out = tmp_path / "child.json"
    from fidelity import compose

    variant = compose.variant_names()[0]
    rc = cli_main(["fork", str(path), "--variant", variant, "--directive", "do it", "--out", str(out)])
    assert rc == 0, capsys.readouterr().err
    child = out.read_bytes()  # Azure: the deployment in the URL is the model; the body still names none
    assert child.startswith(b'{"messages":[') and b'"model"' not in child and b"do it" in child


def test_canonical_json_never_writes_a_null_id(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    body = _b({"contents": [{"role": "model", "parts": [{"functionCall": {"name": "f", "args": {}}}]},
                            {"role": "user", "parts": [{"functionResponse": {"name": "f", "response": {}}}]}]})
    g = wire.get("gemini")
    req = g.parse(body, model="gemini-2.5-flash")
    data = request_to_json(req)
    assert b'"id": null' not in data and b'"call_id": null' not in data
    import dataclasses

    assert g.render(request_from_json(data)) == g.render(dataclasses.replace(req, layout=None))
    src = tmp_path / "r.json"
    src.write_bytes(data)
    assert cli_main(["render", "--provider", "gemini", "--profile", "gemini-rest", str(src)]) == 0
    assert capsys.readouterr().out.startswith('{"contents":[')
    assert cli_main(["render", "--provider", "gemini", "--profile", "nope", str(src)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "nope" in err[0]


def test_conflicting_evidence_is_said_on_import_and_diff(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    url = "https://api.openai.com/v1/chat/completions"
    first = {"model": "claude-sonnet-4-5", "system": "s", "messages": [{"role": "user", "content": "a"}]}
    second = {**first, "messages": first["messages"] + [{"role": "assistant", "content": "b"}]}
    src = tmp_path / "log.jsonl"
    src.write_text("\n".join(json.dumps({"url": url, "body": json.dumps(b, separators=(",", ":"))})
                             for b in (first, second)) + "\n")
    imp = import_file(src)
    assert [s.provider for s in imp.snapshots] == ["anthropic-messages"] * 2
    assert any(n.startswith("detection: the URL (host api.openai.com) says openai-chat") for n in imp.snapshots[0].notes)
    out = tmp_path / "snaps"
    write_imported(imp, out)
    assert cli_main(["diff", str(out), "--json"]) == 0
    err = capsys.readouterr().err
    assert "note:" in err and "read as anthropic-messages" in err


@pytest.mark.parametrize("name,data,fragment", [
    ("bad.yaml.gz", b"notgzip", "not valid gzip data"),
    ("trunc.har.gz", gzip.compress(b'{"log": {"entries": []}}', mtime=0)[:12], "gzip file is truncated"),
])
def test_bad_gzip_source_is_one_line_exit_2(tmp_path: Path, capsys: pytest.CaptureFixture[str], name: str,
                                            data: bytes, fragment: str) -> None:
    src = tmp_path / name
    src.write_bytes(data)
    assert cli_main(["import", str(src), str(tmp_path / "out")]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and str(src) in err[0] and fragment in err[0] and "Traceback" not in err[0]
    assert not (tmp_path / "out").exists() or not any((tmp_path / "out").iterdir())
