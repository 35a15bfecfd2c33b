"""go-vcr cassettes and Polly.js HAR recordings, read by the one reader
(fidelity.traffic.sources). Each file here is made by hand in the shape of a
named public recording; none is copied."""

from __future__ import annotations

import base64
import gzip
import json
from pathlib import Path

import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from fidelity.errors import InputError
from fidelity.replay import replay
from fidelity.tokens_check import check
from fidelity.traffic.apart import NOT_AS_SENT
from fidelity.traffic.sources import entries, list_sources, read_all

OPENAI = "https://api.openai.com/v1/chat/completions"
USAGE = {"prompt_tokens": 1200, "completion_tokens": 5, "total_tokens": 1205,
         "prompt_tokens_details": {"cached_tokens": 1024}}


def _chat(text: str = "hello there") -> bytes:
    return json.dumps({"messages": [{"content": text, "role": "user"}], "model": "gpt-4o"},
                      separators=(",", ":")).encode()


def _go_vcr(path: Path, body: bytes, *, length: int | None = None, url_key: str = "url") -> Path:
    # the shape of charmbracelet/crush internal/agent/testdata/TestCoderAgent/*/simple_test.yaml
    # (go-vcr v4, `version: 2`): `url` not `uri`, Go's "200 OK" status beside `code`,
    # the request's ContentLength, a response body kept as a plain string
    doc = {"version": 2, "interactions": [{
        "id": 0,
        "request": {"proto": "HTTP/1.1", "proto_major": 1, "proto_minor": 1,
                    "content_length": len(body) if length is None else length, "host": "",
                    "body": body.decode(), "headers": {"Content-Type": ["application/json"]},
                    url_key: OPENAI, "method": "POST"},
        "response": {"proto": "HTTP/2.0", "content_length": -1, "uncompressed": True,
                     "body": json.dumps({"model": "gpt-4o-2024-08-06", "usage": USAGE}),
                     "headers": {"Content-Type": ["application/json"]}, "status": "200 OK", "code": 200,
                     "duration": "1.2s"}}]}
    path.write_text("---\n" + yaml.safe_dump(doc, sort_keys=False))
    return path


def test_go_vcr_cassettes_are_read(tmp_path: Path) -> None:
    body = _chat()
    path = _go_vcr(tmp_path / "simple_test.yaml", body)
    assert [s.kind for s in list_sources(tmp_path)] == ["vcr"]
    (ex,), = read_all(path)
    assert (ex.url, ex.body, ex.status, ex.dialect) == (OPENAI, body, 200, "openai-chat")
    assert ("Content-Length", str(len(body))) in ex.headers  # Go sends ContentLength as the header
    assert dict(ex.usage or {})["cache_read"] == 1024 and ex.skip is None
    assert replay(path).rows[0].reported.cache_read == 1024
    assert [g["requests"] for g in check([path]).to_json()["groups"]] == [1]


def test_go_vcr_content_length_that_disagrees_sets_the_request_apart(tmp_path: Path) -> None:
    path = _go_vcr(tmp_path / "edited.yaml", _chat(), length=len(_chat()) + 900)
    (ex,), = read_all(path)
    assert ex.skip == NOT_AS_SENT
    assert check([path]).apart == {"openai": {NOT_AS_SENT: 1}}


def test_go_vcr_request_without_a_url_is_one_error_naming_the_file(tmp_path: Path) -> None:
    path = _go_vcr(tmp_path / "broken.yaml", _chat(), url_key="where")
    with pytest.raises(InputError, match="request has no uri") as err:
        read_all(path)
    assert "broken.yaml" in str(err.value) and "\n" not in str(err.value)


@given(st.text(min_size=1, max_size=200), st.integers(min_value=-1, max_value=0))
@settings(suppress_health_check=[HealthCheck.function_scoped_fixture])
def test_go_vcr_round_trip_keeps_the_body_as_written(tmp_path: Path, text: str, unknown: int) -> None:
    body = _chat(text)
    path = _go_vcr(tmp_path / "prop.yaml", body)
    (ex,), = read_all(path)
    assert ex.body == body and ex.skip is None and not ex.reserialised
    path = _go_vcr(tmp_path / "prop.yaml", body, length=unknown)  # Go's -1 / 0: length not known
    (ex,), = read_all(path)
    assert ex.body == body and ex.skip is None and all(k != "Content-Length" for k, _ in ex.headers)


def _pretty(path: Path, sent: bytes) -> Path:
    # the shape of open-telemetry/opentelemetry-python-contrib instrumentation-genai/
    # opentelemetry-instrumentation-openai-v2/tests/cassettes/*.yaml: its PrettyPrintJSONBody
    # serializer re-indents each JSON body; Content-Length keeps the length sent
    doc = {"interactions": [{
        "request": {"body": json.dumps(json.loads(sent), indent=2), "method": "POST", "uri": OPENAI,
                    "headers": {"Content-Length": [str(len(sent))], "Content-Type": ["application/json"]}},
        "response": {"status": {"code": 200, "message": "OK"}, "headers": {"Content-Type": ["application/json"]},
                     "body": {"string": json.dumps({"usage": USAGE}, indent=2)}}}], "version": 1}
    path.write_text(yaml.safe_dump(doc, allow_unicode=True))
    return path


@pytest.mark.parametrize("ascii_only", [False, True])
@pytest.mark.parametrize("separators", [(",", ":"), (", ", ": ")])
def test_a_re_indented_body_is_restored_to_the_length_it_was_sent_with(
        tmp_path: Path, ascii_only: bool, separators: tuple[str, str]) -> None:
    obj = {"messages": [{"role": "user", "content": "un café"}], "model": "gpt-4o-mini", "n": 1}
    sent = json.dumps(obj, separators=separators, ensure_ascii=ascii_only).encode()
    (ex,), = read_all(_pretty(tmp_path / "c.yaml", sent))
    assert ex.body == sent and ex.reserialised and ex.skip is None
    assert dict(ex.usage or {})["cache_read"] == 1024


def test_a_re_indented_body_two_forms_could_have_been_stays_set_apart(tmp_path: Path) -> None:
    # compact with "\\u00e9" escapes and spaced UTF-8 come out the same length here (8 separators,
    # two 2-byte letters written as 6 bytes each): which one was sent is unknown
    obj = {"messages": [{"role": "user", "content": "café, s'il vous plaît"}], "model": "gpt-4o-mini", "n": 1}
    sent = json.dumps(obj, separators=(", ", ": "), ensure_ascii=False).encode()
    assert len(sent) == len(json.dumps(obj, separators=(",", ":")).encode())
    (ex,), = read_all(_pretty(tmp_path / "c.yaml", sent))
    assert ex.skip == NOT_AS_SENT and not ex.reserialised


def test_a_re_indented_body_of_another_length_stays_set_apart(tmp_path: Path) -> None:
    sent = _chat("the original prompt, longer than the one the cassette keeps")
    path = _pretty(tmp_path / "c.yaml", sent)
    path.write_text(path.read_text().replace("longer than the one the cassette keeps", "edited"))
    (ex,), = read_all(path)
    assert ex.skip == NOT_AS_SENT and not ex.reserialised and ex.body.startswith(b"{\n")


def _polly(path: Path, response: bytes, cuts: list[int], *, hex_chunks: bool = False) -> Path:
    # the shape of traceloop/openllmetry-js packages/traceloop-sdk/recordings/*/recording.har
    # (Polly.js node-http adapter): a gzip response kept as a JSON array of its chunks, base64
    # with `encoding: "base64"` (Polly 5+) or hex with no `encoding` (Polly before 5)
    packed = gzip.compress(response, mtime=0)
    edges = sorted({0, len(packed), *(c % (len(packed) + 1) for c in cuts)})
    chunks = [packed[a:b] for a, b in zip(edges, edges[1:], strict=False)]
    content = {"mimeType": "application/json",
               "text": json.dumps([c.hex() if hex_chunks else base64.b64encode(c).decode() for c in chunks]),
               "size": len(packed)}
    if not hex_chunks:
        content["encoding"] = "base64"
    body = _chat()
    doc = {"log": {"_recordingName": "Test-OpenAI/should-work", "creator": {"name": "Polly.JS", "version": "6.0.6"},
                   "entries": [{
                       "_id": "0f1e", "_order": 0, "startedDateTime": "2025-08-14T14:45:54.000Z",
                       "request": {"method": "POST", "url": OPENAI, "bodySize": len(body),
                                   "headers": [{"name": "content-type", "value": "application/json"}],
                                   "postData": {"mimeType": "application/json", "params": [],
                                                "text": body.decode()}},
                       "response": {"status": 200, "content": content,
                                    "headers": [{"name": "content-type", "value": "application/json"},
                                                {"name": "content-encoding", "value": "gzip"}]}}]}}
    path.write_text(json.dumps(doc))
    return path


RESPONSE = json.dumps({"model": "gpt-4o-2024-08-06", "usage": USAGE}).encode()


@pytest.mark.parametrize("hex_chunks", [False, True])
def test_polly_chunked_gzip_responses_are_read(tmp_path: Path, hex_chunks: bool) -> None:
    path = _polly(tmp_path / "recording.har", RESPONSE, [10, 40], hex_chunks=hex_chunks)
    assert [s.kind for s in list_sources(tmp_path)] == ["har"]
    (ex,), = read_all(path)
    assert ex.body == _chat() and ex.response_model == "gpt-4o-2024-08-06"
    assert dict(ex.usage or {})["prompt"] == 1200 and dict(ex.usage or {})["cache_read"] == 1024


@given(st.lists(st.integers(min_value=0, max_value=400), max_size=8), st.booleans())
@settings(suppress_health_check=[HealthCheck.function_scoped_fixture])
def test_polly_chunks_round_trip_wherever_the_stream_was_cut(tmp_path: Path, cuts: list[int],
                                                             hex_chunks: bool) -> None:
    (ex,), = read_all(_polly(tmp_path / "recording.har", RESPONSE, cuts, hex_chunks=hex_chunks))
    assert dict(ex.usage or {})["cache_read"] == 1024


def test_polly_chunks_that_do_not_decode_leave_the_request_without_usage(tmp_path: Path) -> None:
    path = _polly(tmp_path / "recording.har", RESPONSE, [5])
    doc = json.loads(path.read_text())
    doc["log"]["entries"][0]["response"]["content"]["text"] = '["not base64!"]'
    path.write_text(json.dumps(doc))
    (ex,) = entries(list_sources(path)[0])
    assert ex.body == _chat() and ex.usage is None


_JSON = st.recursive(st.none() | st.booleans() | st.integers() | st.text(max_size=20),
                     lambda kids: st.lists(kids, max_size=4) | st.dictionaries(st.text(max_size=8), kids, max_size=4),
                     max_leaves=12)


@given(st.dictionaries(st.text(max_size=8), _JSON, min_size=1, max_size=5), st.booleans(), st.booleans())
@settings(suppress_health_check=[HealthCheck.function_scoped_fixture])
def test_a_restored_body_is_the_one_sent_or_none(tmp_path: Path, obj: dict, spaced: bool, ascii_only: bool) -> None:
    from fidelity.traffic.sources import _compacted

    sent = json.dumps(obj, separators=(", ", ": ") if spaced else (",", ":"), ensure_ascii=ascii_only).encode()
    pretty = json.dumps(obj, indent=2).encode()
    restored = _compacted(pretty, len(sent))
    assert restored is None or restored == sent or pretty == sent


def _betamax(path: Path, request: bytes, response: bytes) -> Path:
    # the shape Betamax writes (betamaxpy/betamax, src/betamax/cassette/util.py add_body and
    # serialize_response) with preserve_exact_body_bytes: JSON, bodies as base64_string, the
    # response as it came off the wire (gzip), recorded_at in ISO 8601
    doc = {"http_interactions": [{
        "request": {"body": {"encoding": "utf-8", "base64_string": base64.b64encode(request).decode()},
                    "headers": {"Content-Type": ["application/json"], "Content-Length": [str(len(request))]},
                    "method": "POST", "uri": OPENAI},
        "response": {"body": {"encoding": None, "base64_string": base64.b64encode(gzip.compress(response,
                                                                                               mtime=0)).decode()},
                     "headers": {"Content-Type": ["application/json"], "Content-Encoding": ["gzip"]},
                     "status": {"code": 200, "message": "OK"}, "url": OPENAI},
        "recorded_at": "2025-03-01T10:00:00"}], "recorded_with": "betamax/0.9.0"}
    path.write_text(json.dumps(doc))
    return path


def test_betamax_json_cassettes_with_base64_bodies_are_read(tmp_path: Path) -> None:
    body = _chat("combien de tokens ?")
    path = _betamax(tmp_path / "test_chat.json", body, RESPONSE)
    assert [s.kind for s in list_sources(tmp_path)] == ["ruby-vcr"]
    (ex,), = read_all(path)
    assert ex.body == body and ex.skip is None and ex.dialect == "openai-chat"
    assert dict(ex.usage or {})["cache_read"] == 1024


def test_betamax_body_that_is_not_base64_is_one_error_naming_the_file(tmp_path: Path) -> None:
    path = _betamax(tmp_path / "bad.json", _chat(), RESPONSE)
    path.write_text(path.read_text().replace('"base64_string": "', '"base64_string": "%', 1))
    with pytest.raises(InputError, match="base64_string body is not base64") as err:
        read_all(path)
    assert "bad.json" in str(err.value) and "/http_interactions/0/request/body" in str(err.value)


def test_ruby_vcr_base64_string_bodies_wrapped_at_60_characters_are_read(tmp_path: Path) -> None:
    # the shape of alexrudall/ruby-openai spec/fixtures/cassettes/images_variations_image_png.yml:
    # VCR's preserve_exact_body_bytes writes Base64.encode64, a newline every 60 characters
    body = _chat("a long enough prompt to wrap the base64 text over more than one line of sixty")
    wrapped = base64.encodebytes(body).decode()
    assert wrapped.count("\n") > 1
    path = tmp_path / "exact.yml"
    path.write_text("---\nhttp_interactions:\n- request:\n    method: post\n    uri: " + OPENAI + "\n    body:\n"
                    "      encoding: ASCII-8BIT\n      base64_string: |\n"
                    + "".join("        " + line + "\n" for line in wrapped.splitlines())
                    + "    headers: {}\n  response:\n    status: {code: 200, message: OK}\n    headers: {}\n"
                    "    body: {encoding: UTF-8, string: '" + json.dumps({"usage": USAGE}) + "'}\n"
                    "  recorded_at: Tue, 01 Dec 2026 10:00:00 GMT\nrecorded_with: VCR 6.3.1\n")
    (ex,), = read_all(path)
    assert ex.body == body and dict(ex.usage or {})["cache_read"] == 1024


def test_a_har_json_array_response_kept_decoded_beside_its_gzip_header_is_read(tmp_path: Path) -> None:
    # a browser's HAR export keeps the decoded text and the Content-Encoding header; a Gemini
    # streamGenerateContent reply without SSE is a JSON array, which is not Polly's chunk array
    path = _polly(tmp_path / "recording.har", RESPONSE, [])
    doc = json.loads(path.read_text())
    content = doc["log"]["entries"][0]["response"]["content"]
    content.pop("encoding")
    content["text"] = json.dumps([{"model": "gpt-4o-2024-08-06"}, {"usage": USAGE}])
    path.write_text(json.dumps(doc))
    (ex,), = read_all(path)
    assert dict(ex.usage or {})["cache_read"] == 1024
