"""Capture from the real SDK clients through a mock transport: the body on
disk equals the bytes the transport received, and a planted secret (API key,
extra headers, cookies, query parameters) appears in no written byte."""

from __future__ import annotations

import asyncio
from pathlib import Path

import anthropic
import httpx
import httpx2
import openai
import pytest
from google import genai
from google.genai import types
from hypothesis import given, settings
from hypothesis import strategies as st

from fidelity.capture import AsyncRecordingTransport, RecordingTransport, record, snapshot
from fidelity.capture.redact import Redactor, SecretLeak, ensure_clean

SECRET = "sk-PLANTED-5ecret-0123456789abcdef"

_REPLIES = {
    "api.openai.com": {"id": "c", "object": "chat.completion", "created": 1, "model": "gpt-4o",
                       "choices": [{"index": 0, "message": {"role": "assistant", "content": "ok"}, "finish_reason": "stop"}]},
    "api.anthropic.com": {"id": "m", "type": "message", "role": "assistant", "model": "claude-sonnet-4-5",
                          "content": [{"type": "text", "text": "ok"}], "stop_reason": "end_turn",
                          "usage": {"input_tokens": 1, "output_tokens": 1}},
    "generativelanguage.googleapis.com": {"candidates": [{"content": {"role": "model", "parts": [{"text": "ok"}]}}]},
}


class Seen:
    """A mock transport handler that keeps what it received."""

    def __init__(self, lib: object) -> None:
        self.lib = lib
        self.bodies: list[bytes] = []
        self.urls: list[str] = []
        self.headers: list[dict[str, str]] = []

    def __call__(self, request: object) -> object:
        self.bodies.append(request.content)  # type: ignore[attr-defined]
        self.urls.append(str(request.url))  # type: ignore[attr-defined]
        self.headers.append(dict(request.headers))  # type: ignore[attr-defined]
        return self.lib.Response(200, json=_REPLIES[request.url.host])  # type: ignore[attr-defined]


def _scan(folder: Path, secret: str = SECRET) -> None:
    files = list(folder.iterdir())
    assert files, "nothing was written"
    for f in files:
        data = f.read_bytes()
        for form in {secret, secret[3:], secret.replace("-", "%2D")}:
            assert form.encode() not in data, f"secret leaked into {f.name}"


def _bodies(folder: Path) -> list[bytes]:
    return [snapshot.read(p).body for p in snapshot.iter_folder(folder)]


def _client(lib: object, seen: Seen) -> object:
    return lib.Client(transport=lib.MockTransport(seen), cookies={"session_id": SECRET})  # type: ignore[attr-defined]


def test_openai_sdk(tmp_path: Path) -> None:
    seen = Seen(httpx2)
    http = _client(httpx2, seen)
    rec = record(http, tmp_path)
    client = openai.OpenAI(api_key=SECRET, http_client=http, default_headers={"x-proxy-token": SECRET},
                           default_query={"key": SECRET, "api_key": SECRET})
    msgs = [{"role": "system", "content": "Zürich ✓ \u2028"}, {"role": "user", "content": "hi"}]
    client.chat.completions.create(model="gpt-4o", messages=msgs)
    client.chat.completions.create(model="gpt-4o", messages=msgs + [{"role": "assistant", "content": "ok"}])
    assert SECRET in seen.urls[0] and SECRET in seen.headers[0]["authorization"]  # the secret really was sent
    assert _bodies(tmp_path) == seen.bodies
    assert [p.name for p in rec.paths] == ["0001-openai-chat-gpt-4o.snapshot", "0002-openai-chat-gpt-4o.snapshot"]
    meta = snapshot.read(rec.paths[0])
    assert meta.provider == "openai-chat" and meta.family == "openai" and meta.body_exact
    assert {"header:authorization", "header:x-proxy-token", "query:key", "query:api_key"} <= set(meta.redacted)
    _scan(tmp_path)


@pytest.mark.filterwarnings("ignore::DeprecationWarning")
def test_anthropic_sdk(tmp_path: Path) -> None:
    seen = Seen(httpx2)
    http = _client(httpx2, seen)
    client = anthropic.Anthropic(api_key=SECRET, http_client=http, default_headers={"x-api-key": SECRET})
    rec = record(client, tmp_path)  # attach through the SDK client
    client.messages.create(model="claude-sonnet-4-5", max_tokens=64, system="be brief",
                           messages=[{"role": "user", "content": "hi"}])
    assert _bodies(tmp_path) == seen.bodies
    meta = snapshot.read(rec.paths[0])
    assert meta.provider == "anthropic-messages" and meta.model == "claude-sonnet-4-5"
    assert dict(meta.headers)["anthropic-version"]
    _scan(tmp_path)


def test_gemini_sdk(tmp_path: Path) -> None:
    seen = Seen(httpx2)
    http = _client(httpx2, seen)
    rec = record(http, tmp_path)
    client = genai.Client(api_key=SECRET, http_options=types.HttpOptions(httpx_client=http))
    client.models.generate_content(model="gemini-2.0-flash", contents="hi")
    assert _bodies(tmp_path) == seen.bodies
    meta = snapshot.read(rec.paths[0])
    assert meta.provider == "gemini" and meta.model == "gemini-2.0-flash"
    assert "header:x-goog-api-key" in meta.redacted
    _scan(tmp_path)


def test_transport_wrapper_and_plain_httpx(tmp_path: Path) -> None:
    seen = Seen(httpx)
    transport = RecordingTransport(httpx.MockTransport(seen), tmp_path)
    with httpx.Client(transport=transport) as http:
        http.post(f"https://api.openai.com/v1/chat/completions?key={SECRET}",
                  content=b'{"model":"gpt-4o","messages":[],"api_key":"' + SECRET.encode() + b'"}',
                  headers={"Authorization": f"Bearer {SECRET}"})
    snap = snapshot.read(transport.recorder.paths[0])
    assert not snap.body_exact and any(n.startswith("body:api_key") for n in snap.redacted)
    assert snap.body == b'{"model":"gpt-4o","messages":[],"api_key":"[REDACTED]"}'
    _scan(tmp_path)


def test_async_transport(tmp_path: Path) -> None:
    seen = Seen(httpx2)

    async def main() -> None:
        transport = AsyncRecordingTransport(httpx2.MockTransport(seen), tmp_path)
        async with httpx2.AsyncClient(transport=transport) as http:
            client = openai.AsyncOpenAI(api_key=SECRET, http_client=http)
            await client.chat.completions.create(model="gpt-4o", messages=[{"role": "user", "content": "hi"}])

    asyncio.run(main())
    assert _bodies(tmp_path) == seen.bodies
    _scan(tmp_path)


def test_numbering_continues_in_an_existing_folder(tmp_path: Path) -> None:
    for _ in range(2):
        seen = Seen(httpx2)
        http = _client(httpx2, seen)
        record(http, tmp_path)
        openai.OpenAI(api_key=SECRET, http_client=http).chat.completions.create(
            model="gpt-4o", messages=[{"role": "user", "content": "hi"}])
    assert [p.name[:4] for p in snapshot.iter_folder(tmp_path)] == ["0001", "0002"]


def test_ensure_clean_refuses() -> None:
    r = Redactor([SECRET])
    with pytest.raises(SecretLeak) as info:
        ensure_clean(b"x" + SECRET.encode(), r)
    assert SECRET not in str(info.value)


def test_record_rejects_unknown_clients() -> None:
    with pytest.raises(TypeError):
        record(object(), "unused")


_name = st.text(alphabet="abcdefghijklmnopqrstuvwxyz-", min_size=1, max_size=12)
_secret = st.text(alphabet="ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_.", min_size=12, max_size=40)
_secret_header = st.sampled_from(["Authorization", "x-api-key", "api-key", "x-goog-api-key", "Cookie",
                                  "X-Session-Token", "proxy-authorization"])
_secret_param = st.sampled_from(["key", "api_key", "access_token", "token", "sig", "apikey"])


@settings(max_examples=200, deadline=None)
@given(secret=_secret, hname=_secret_header, pname=_secret_param,
       plain=st.lists(st.tuples(_name, _name), max_size=4),
       bearer=st.booleans(), in_body=st.booleans(), tmp=st.integers(0, 10**9))
def test_planted_secret_never_written(tmp_path_factory: pytest.TempPathFactory, secret: str, hname: str, pname: str,
                                      plain: list[tuple[str, str]], bearer: bool, in_body: bool, tmp: int) -> None:
    folder = tmp_path_factory.mktemp("cap")
    value = f"Bearer {secret}" if bearer else (f"sid={secret}; theme=dark" if hname == "Cookie" else secret)
    headers = [(k, v) for k, v in plain] + [(hname, value)]
    body = b'{"model":"gpt-4o","messages":[{"role":"user","content":"hello"}]'
    body += (b',"api_key":"' + secret.encode() + b'"}') if in_body else b"}"
    seen = Seen(httpx)
    with httpx.Client(transport=RecordingTransport(httpx.MockTransport(seen), folder)) as http:
        http.post(f"https://api.openai.com/v1/chat/completions?alt=x&{pname}={secret}", content=body,
                  headers=headers)
    for f in folder.iterdir():
        assert secret.encode() not in f.read_bytes()
    snap = snapshot.read(next(folder.iterdir()))
    assert (snap.body == seen.bodies[0]) is (not in_body)
