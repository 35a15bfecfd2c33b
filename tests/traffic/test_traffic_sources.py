"""One reader of recordings, one set-apart rule (fidelity.traffic): the
bugs the parallel readers had, each with the recording that shows it."""

from __future__ import annotations

import base64
import gzip
import json
import shutil
from datetime import UTC, datetime
from pathlib import Path

import pytest

from fidelity import providers
from fidelity.capture.classify import classify
from fidelity.capture.survey import survey
from fidelity.errors import InputError
from fidelity.replay import replay
from fidelity.scan import scan
from fidelity.tokens_check import check
from fidelity.traffic.sources import list_sources, read_all

HARNESS = Path(__file__).resolve().parents[2] / "fixtures" / "harness"


def _vcrpy(path: Path, interactions: list[tuple[str, dict, dict, int]]) -> Path:
    doc = {"version": 1, "interactions": [
        {"request": {"method": "POST", "uri": uri, "body": json.dumps(body), "headers": {}},
         "response": {"status": {"code": status, "message": "x"},
                      "headers": {"Content-Type": ["application/json"]}, "body": {"string": json.dumps(resp)}}}
        for uri, body, resp, status in interactions]}
    path.write_text(json.dumps(doc))
    return path


ANTHROPIC = "https://api.anthropic.com/v1/messages"
A_USAGE = {"usage": {"input_tokens": 20, "cache_read_input_tokens": 0, "cache_creation_input_tokens": 0,
                     "output_tokens": 3}}


def _anthropic(tools: list[dict] | None = None) -> dict:
    body: dict = {"model": "claude-sonnet-4-5", "max_tokens": 10,
                  "messages": [{"role": "user", "content": "what is on example.com?"}]}
    if tools is not None:
        body["tools"] = tools
    return body


def test_proxy_snapshots_carry_reported_usage_to_replay_and_tokens_check(tmp_path: Path) -> None:
    # the proxy writes usage under response.usage; replay showed "-" and tokens-check an empty table
    folder = tmp_path / "qwen"
    shutil.copytree(HARNESS / "qwen-code-0.24.4", folder)
    rows = replay(folder).rows
    assert [r.reported.prompt for r in rows] == [17108, 13890]
    result = check([folder])
    assert [r.billed for r in result.rows] == [17108, 13890]
    assert [r.predicted for r in result.rows] == [r.predicted.prompt for r in rows if r.predicted]


@pytest.mark.parametrize("tools, uri, reason", [
    ([{"type": "web_fetch_20250910", "name": "web_fetch", "max_uses": 2}], ANTHROPIC, "server tools"),
    ([{"type": "computer_20250124", "name": "computer", "display_width_px": 1024, "display_height_px": 768}],
     ANTHROPIC, "provider tools"),
])
def test_tokens_check_sets_apart_what_replay_sets_apart(tmp_path: Path, tools: list[dict], uri: str,
                                                          reason: str) -> None:
    cassette = _vcrpy(tmp_path / "c.json", [(uri, _anthropic(tools), A_USAGE, 200), (uri, _anthropic(), A_USAGE, 200)])
    rows = replay(cassette).rows
    assert [r.apart for r in rows] == [reason, None]
    result = check([cassette])
    assert len(result.rows) == 1 and result.apart == {"anthropic": {reason: 1}}


@pytest.mark.parametrize("tool", [{"urlContext": {}}, {"googleSearch": {}}, {"google_search": {}}])
def test_gemini_server_tools_are_set_apart(tmp_path: Path, tool: dict) -> None:
    uri = "https://generativelanguage.googleapis.com/v1beta/models/gemini-2.5-flash:generateContent"
    body = {"contents": [{"role": "user", "parts": [{"text": "summarise https://example.com"}]}], "tools": [tool]}
    resp = {"usageMetadata": {"promptTokenCount": 12, "candidatesTokenCount": 3}}
    cassette = _vcrpy(tmp_path / "g.json", [(uri, body, resp, 200)])
    (ex,), = read_all(cassette)
    assert ex.apart == "server tools"
    assert check([cassette]).rows == () and replay(cassette).rows[0].apart == "server tools"


def test_legacy_completions_are_not_scored(tmp_path: Path) -> None:
    uri = "https://api.openai.com/v1/completions"
    resp = {"usage": {"prompt_tokens": 5, "completion_tokens": 1}}
    cassette = _vcrpy(tmp_path / "l.json", [(uri, {"model": "gpt-3.5-turbo-instruct", "prompt": "hi"}, resp, 200)])
    assert check([cassette]).rows == ()
    assert replay(cassette).rows[0].note == "not a generation request: legacy completions (prompt) request"


def test_survey_reads_json_cassettes(tmp_path: Path) -> None:
    body = {"model": "gpt-4o", "messages": [{"role": "user", "content": "hi"}]}
    resp = {"usage": {"prompt_tokens": 8, "completion_tokens": 1}}
    _vcrpy(tmp_path / "chat.json", [("https://api.openai.com/v1/chat/completions", body, resp, 200)])
    got = survey(tmp_path)
    assert got.sources == 1 and got.requests == 1


def test_scan_recurses_into_folders_as_replay_does() -> None:
    # "no request logs or snapshots in this folder" before: snapshots one level down
    result = scan([HARNESS], workers=1)
    assert sum(m["requests"] for m in result["by_model"]) == sum(1 for r in replay(HARNESS).rows)
    assert {s.kind for s in list_sources(HARNESS)} == {"snapshots"}


def test_gemini_openai_compatible_endpoint_is_gemini() -> None:
    ep = providers.from_url("https://generativelanguage.googleapis.com/v1beta/openai/chat/completions")
    assert ep is not None and (ep.provider, ep.dialect) == ("gemini", "openai-chat")


def test_hugging_face_router_chat_is_a_generation_request() -> None:
    body = b'{"model":"meta-llama/Llama-3.1-8B-Instruct","messages":[{"role":"user","content":"hi"}]}'
    assert classify("POST", "https://router.huggingface.co/v1/chat/completions", {}, body).generation
    assert not classify("GET", "https://huggingface.co/gpt2/resolve/main/config.json", {}, b"").generation


# A Ruby VCR cassette as the VCR gem writes it (lib/vcr/cassette/serializers/yaml.rb;
# https://benoittgt.github.io/vcr/): the response body gzipped, so Psych writes it as
# !binary base64; recorded_at is an HTTP date.
def _ruby_vcr(path: Path) -> Path:
    req = json.dumps(_anthropic(), separators=(",", ":"))
    resp = {"id": "msg_1", "model": "claude-sonnet-4-5",
            "usage": {"input_tokens": 4, "cache_read_input_tokens": 1500, "cache_creation_input_tokens": 20,
                      "output_tokens": 9}}
    packed = base64.encodebytes(gzip.compress(json.dumps(resp).encode(), mtime=0)).decode()
    lines = "\n".join("        " + x for x in packed.strip().splitlines())
    path.write_text(f"""---
http_interactions:
- request:
    method: post
    uri: {ANTHROPIC}
    body:
      encoding: UTF-8
      string: '{req}'
    headers:
      Content-Type:
      - application/json
  response:
    status:
      code: 200
      message: OK
    headers:
      Content-Type:
      - application/json
      Content-Encoding:
      - gzip
    body:
      encoding: ASCII-8BIT
      string: !binary |-
{lines}
  recorded_at: Tue, 01 Dec 2026 10:00:00 GMT
recorded_with: VCR 6.3.1
""")
    return path


def test_ruby_vcr_cassettes_are_read(tmp_path: Path) -> None:
    path = _ruby_vcr(tmp_path / "anthropic_cache.yml")
    assert [s.kind for s in list_sources(tmp_path)] == ["ruby-vcr"]
    (ex,), = read_all(path)
    assert ex.url == ANTHROPIC and ex.dialect == "anthropic-messages" and ex.model == "claude-sonnet-4-5"
    assert dict(ex.usage or {}) == {"prompt": 1524, "cache_read": 1500, "cache_write": 20, "output": 9,
                                    "source": "json"}
    assert ex.time == datetime(2026, 12, 1, 10, 0, tzinfo=UTC).timestamp()
    assert replay(path).rows[0].reported.cache_read == 1500


def test_ruby_vcr_alias_is_refused_in_one_line(tmp_path: Path) -> None:
    path = tmp_path / "bomb.yml"
    path.write_text("---\nhttp_interactions:\n- &a {request: {uri: x}}\n- *a\n")
    with pytest.raises(InputError, match="alias"):
        read_all(path)


def test_replay_and_tokens_check_say_what_they_scored_and_set_apart(tmp_path: Path) -> None:
    uri = ANTHROPIC
    cassette = _vcrpy(tmp_path / "c.json", [
        (uri, _anthropic([{"type": "web_fetch_20250910", "name": "web_fetch"}]), A_USAGE, 200),
        (uri, _anthropic(), A_USAGE, 529),
        (uri, _anthropic(), A_USAGE, 200)])
    summary = replay(cassette).summary["anthropic"]
    assert summary["scored"] == 1
    assert summary["set_apart"] == {"failed request (HTTP 529)": 1, "server tools": 1}
    doc = check([cassette]).to_json()
    assert doc["set_apart"] == {"anthropic": {"failed request (HTTP 529)": 1, "server tools": 1}}
    assert [(g["provider"], g["kind"], g["requests"]) for g in doc["groups"]] == [("anthropic", "text", 1)]


def test_a_body_edited_after_recording_is_in_no_figure(tmp_path: Path) -> None:
    # openllmetry's Bedrock cassettes hold a stand-in ("very very long system prompt", 312 bytes)
    # for a 67,988-byte body: counting it against the 18,135 tokens billed measures the edit
    from fidelity.traffic.apart import NOT_AS_SENT

    body = json.dumps(_anthropic())
    doc = {"interactions": [
        {"request": {"method": "POST", "uri": ANTHROPIC, "body": body,
                     "headers": {"Content-Length": [str(len(body) + n)]}},
         "response": {"status": {"code": 200}, "headers": {}, "body": {"string": json.dumps(A_USAGE)}}}
        for n in (5000, 0)]}
    (tmp_path / "edited.json").write_text(json.dumps(doc))
    rows = replay(tmp_path / "edited.json").rows
    assert [r.note for r in rows] == [NOT_AS_SENT, None]
    assert check([tmp_path / "edited.json"]).apart == {"anthropic": {NOT_AS_SENT: 1}}


def test_gemini_openai_compatible_detection_names_gemini_and_counts_with_its_rules(tmp_path: Path) -> None:
    from fidelity.wire.evidence import detect_request

    url = "https://generativelanguage.googleapis.com/v1beta/openai/chat/completions"
    body = {"model": "gemini-2.5-flash", "messages": [{"role": "user", "content": "hello there"}]}
    found = detect_request(body, url=url)
    assert (found.dialect, found.family, found.conflict) == ("openai-chat", "gemini", None)
    resp = {"usage": {"prompt_tokens": 4, "completion_tokens": 1}}
    result = check([_vcrpy(tmp_path / "g.json", [(url, body, resp, 200)])])
    (row,) = result.rows
    assert (row.provider, row.dialect, row.estimated) == ("gemini", "openai-chat", True)


def test_survey_counts_what_the_one_rule_sets_apart(tmp_path: Path) -> None:
    _vcrpy(tmp_path / "c.json", [(ANTHROPIC, _anthropic([{"type": "web_fetch_20250910", "name": "web_fetch"}]),
                                  A_USAGE, 200), (ANTHROPIC, _anthropic(), A_USAGE, 500)])
    got = survey(tmp_path)
    assert got.requests == 2 and got.set_apart == {"server tools": 1, "failed request (HTTP 500)": 1}
    assert "left out of replay, scan and tokens-check figures" in "\n".join(got.lines())


def test_langchain_standard_test_cassettes_are_read(tmp_path: Path) -> None:
    """langchain's standard tests keep vcrpy's cassette dict as two parallel
    lists in gzipped YAML, bodies as ``!!binary`` (as in langchain-ai/langchain-aws
    libs/aws/tests/cassettes/*.yaml.gz)."""
    import yaml

    req = json.dumps(_anthropic(), separators=(",", ":")).encode()
    resp = json.dumps({"id": "msg_1", "model": "claude-sonnet-4-5",
                       "usage": {"input_tokens": 4, "cache_read_input_tokens": 1500,
                                 "cache_creation_input_tokens": 20, "output_tokens": 9}}).encode()
    doc = {"requests": [{"body": req, "headers": {"Content-Type": ["application/json"]}, "method": "POST",
                         "uri": ANTHROPIC}],
           "responses": [{"body": {"string": resp}, "headers": {"Content-Type": ["application/json"]},
                          "status": {"code": 200, "message": "OK"}}]}
    path = tmp_path / "test_cache[v1].yaml.gz"
    path.write_bytes(gzip.compress(yaml.safe_dump(doc).encode(), mtime=0))
    (ex,), = read_all(path)
    assert ex.body == req and ex.dialect == "anthropic-messages" and ex.status == 200
    assert dict(ex.usage or {})["cache_read"] == 1500
    doc["responses"] = []
    path.write_bytes(gzip.compress(yaml.safe_dump(doc).encode(), mtime=0))
    with pytest.raises(InputError, match="1 requests but 0 responses"):
        read_all(path)
