"""A recognisable secret planted in every place a credential can hide never
reaches a written byte: headers, query keys, URL userinfo, ``api_key``
members of the body, and the same value repeated elsewhere in the body."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from fidelity.capture.importers import import_file, write_imported

SECRET = "sk-PLANTED-0123456789abcdef"
BODY = {"model": "gpt-4o", "api_key": SECRET,
        "messages": [{"role": "user", "content": "hi"}], "extra_body": {"apiKey": SECRET}}
HEADERS = {"authorization": f"Bearer {SECRET}", "x-api-key": SECRET, "api-key": SECRET,
           "x-goog-api-key": SECRET, "cookie": f"session={SECRET}", "x-my-session-token": SECRET,
           "content-type": "application/json", "user-agent": "OpenAI/Python 1.0"}
URL = f"https://user:{SECRET}@api.openai.com/v1/chat/completions?key={SECRET}&api_key={SECRET}&alt=sse"


def _written(folder: Path) -> bytes:
    return b"".join(p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file())


def _assert_clean(folder: Path) -> None:
    data = _written(folder)
    assert data, "nothing written"
    assert SECRET.encode() not in data
    assert b"PLANTED" not in data  # not even a fragment


def test_har_import_redacts_everywhere(tmp_path: Path) -> None:
    har = {"log": {"version": "1.2", "entries": [{"request": {
        "method": "POST", "url": URL, "headers": [{"name": k, "value": v} for k, v in HEADERS.items()],
        "postData": {"mimeType": "application/json", "text": json.dumps(BODY)}}}]}}
    src = tmp_path / "x.har"
    src.write_text(json.dumps(har))
    write_imported(import_file(src), tmp_path / "out")
    _assert_clean(tmp_path / "out")


def test_cassette_and_jsonl_imports_redact(tmp_path: Path) -> None:
    cas = {"version": 1, "interactions": [{"request": {"method": "POST", "uri": URL,
                                                        "headers": {k: [v] for k, v in HEADERS.items()},
                                                        "body": json.dumps(BODY)}, "response": {}}]}
    (tmp_path / "c.json").write_text(json.dumps(cas))
    write_imported(import_file(tmp_path / "c.json", "cassette"), tmp_path / "out1")
    _assert_clean(tmp_path / "out1")
    line = {"url": URL, "method": "POST", "headers": HEADERS, "body": json.dumps(BODY)}
    (tmp_path / "log.jsonl").write_text(json.dumps(line) + "\n" + json.dumps(BODY) + "\n")
    write_imported(import_file(tmp_path / "log.jsonl", "jsonl"), tmp_path / "out2")
    _assert_clean(tmp_path / "out2")


def test_capture_redacts_before_writing(tmp_path: Path) -> None:
    httpx = pytest.importorskip("httpx")
    from fidelity.capture.transport import RecordingTransport

    def reply(request: object) -> object:
        return httpx.Response(200, json={"ok": True})

    transport = RecordingTransport(httpx.MockTransport(reply), tmp_path / "snaps")
    with httpx.Client(transport=transport) as client:
        client.post(URL, headers=HEADERS, content=json.dumps(BODY).encode())
    _assert_clean(tmp_path / "snaps")
