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
    assert (ex.url, ex.body, ex.status, ex.dialect, ex.recorded_size) == (OPENAI, body, 200, "openai-chat", len(body))
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
    assert ex.body == body and ex.skip is None and ex.recorded_size == len(body)
    path = _go_vcr(tmp_path / "prop.yaml", body, length=unknown)  # Go's -1 / 0: length not known
    (ex,), = read_all(path)
    assert ex.body == body and ex.skip is None and ex.recorded_size is None


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
