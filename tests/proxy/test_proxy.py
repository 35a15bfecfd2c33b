"""Contract of `fidelity proxy` and `fidelity upstream` (loopback only).

Bodies byte-identical upstream and on disk; no secret on disk; SSE passed
through as it arrives; 50 concurrent streams; one-line errors with exit 2;
Ctrl-C flushes and exits 0; the official SDKs parse the scripted replies.
"""

from __future__ import annotations

import hashlib
import os
import signal
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path

import orjson
import pytest

pytest.importorskip("aiohttp")
httpx = pytest.importorskip("httpx")

from fidelity.proxy import _store  # noqa: E402
from fidelity.proxy.script import parse_script  # noqa: E402
from fidelity.proxy.testing import ProxyThread, UpstreamThread  # noqa: E402

REPO = Path(__file__).resolve().parents[2]
ENV = {**os.environ, "PYTHONPATH": str(REPO)}

SCRIPT = parse_script({
    "defaults": {"text": "Hello from the scripted upstream."},
    "rule": [
        {"name": "slow", "when": {"last_contains": "SLOW"}, "reply": {"text": "one two three", "event_delay_s": 0.4}},
        {"name": "tool", "when": {"last_contains": "TOOL"},
         "reply": {"tool_calls": [{"name": "lookup", "arguments": {"b": 1, "a": [2, 3]}}]}},
    ],
})

SYSTEM = "You are a careful assistant. " * 300  # past OpenAI's 1,024-token cache minimum


def chat_body(text: str, *, stream: bool = True) -> bytes:
    # hand-written bytes: odd spacing and key order must survive the trip
    s = ', "stream": true, "stream_options": {"include_usage": true}' if stream else ""
    return ('{"model": "gpt-4o", "messages": [{"role": "system", "content": "' + SYSTEM + '"}, '
            '{"role": "user", "content": "' + text + '"}]' + s + '}').encode()


def snapshots(folder: Path) -> list[_store.Snapshot]:
    return [_store.snapshot.read(p) for p in sorted(folder.glob("*.snapshot"))]


@pytest.fixture
def upstream():
    with UpstreamThread(SCRIPT) as up:
        yield up


@pytest.fixture
def proxied(upstream, tmp_path):
    with ProxyThread(upstream.url, tmp_path / "snaps") as px:
        yield upstream, px, tmp_path / "snaps"


def test_bodies_byte_identical_upstream_and_on_disk(proxied):
    upstream, px, out = proxied
    bodies = [chat_body("hi"), chat_body("hi again", stream=False),
              b'{"max_tokens":64,"messages":[{"role":"user","content":"caf\\u00e9 \xe2\x82\xac"}],"model":"claude-sonnet-4-6","system":"S"}']
    paths = ["/v1/chat/completions", "/v1/chat/completions", "/v1/messages"]
    with httpx.Client(timeout=30) as c:
        for body, path in zip(bodies, paths):
            r = c.post(px.url + path, content=body, headers={"content-type": "application/json"})
            assert r.status_code == 200
    time.sleep(0.2)
    got = [r.body for r in upstream.received]
    assert got == bodies
    snaps = snapshots(out)
    assert [s.body for s in snaps] == bodies
    assert all(s.body_exact for s in snaps)
    assert [s.provider for s in snaps] == ["openai-chat", "openai-chat", "anthropic-messages"]


def test_usage_reported_lands_in_metadata(proxied):
    upstream, px, out = proxied
    with httpx.Client(timeout=30) as c:
        c.post(px.url + "/v1/chat/completions", content=chat_body("first"))
        c.post(px.url + "/v1/chat/completions", content=chat_body("first plus more"))
    deadline = time.time() + 30
    while len(px.lines) < 2 and time.time() < deadline:
        time.sleep(0.1)
    heads = [orjson.loads(p.read_bytes().split(b"\n", 1)[0])
             for p in sorted(out.glob("*.snapshot"))]
    usage = heads[1]["response"]["usage"]
    assert heads[1]["response"]["stream"] is True
    assert usage["source"] == "sse" and usage["prompt"] > 0
    # the upstream predicted a cache read for the second request (shared system prompt)
    assert usage["cache_read"] > 0
    assert heads[1]["parent"] == sorted(out.glob("*.snapshot"))[0].name
    assert "reads #0001" in px.lines[1] and "reported" in px.lines[1]


def test_no_secret_on_disk(proxied):
    upstream, px, out = proxied
    secrets = ["sk-planted-header-secret-000111", "ant-planted-xapikey-222333", "cookie-planted-secret-444555",
               "query-planted-key-666777"]
    with httpx.Client(timeout=30) as c:
        r = c.post(px.url + f"/v1/chat/completions?key={secrets[3]}&alt=sse", content=chat_body("x"),
                   headers={"Authorization": f"Bearer {secrets[0]}", "x-api-key": secrets[1],
                            "Cookie": f"session={secrets[2]}; theme=dark"})
        assert r.status_code == 200
    time.sleep(0.3)
    # forwarded unchanged: the upstream saw every credential
    seen = dict((k.lower(), v) for k, v in upstream.received[0].headers)
    assert seen["authorization"] == f"Bearer {secrets[0]}" and seen["x-api-key"] == secrets[1]
    assert secrets[2] in seen["cookie"] and secrets[3] in upstream.received[0].path_qs
    files = list(out.iterdir())
    assert files
    for f in files:
        data = f.read_bytes()
        for s in secrets:
            assert s.encode() not in data, (f, s)
    snap = snapshots(out)[0]
    assert "header:authorization" in snap.redacted and "query:key" in snap.redacted


def _first_event_latency(url: str, body: bytes) -> tuple[float, float]:
    t0 = time.monotonic()
    first = None
    with httpx.Client(timeout=30) as c, c.stream("POST", url + "/v1/chat/completions", content=body) as r:
        for chunk in r.iter_raw():
            if first is None and b"data:" in chunk:
                first = time.monotonic() - t0
    total = time.monotonic() - t0
    assert first is not None
    return first, total


def test_sse_not_buffered(proxied):
    upstream, px, _ = proxied
    body = chat_body("SLOW please")
    direct_first, direct_total = _first_event_latency(upstream.url, body)
    proxy_first, proxy_total = _first_event_latency(px.url, body)
    # the stream takes over 2 s (events 0.4 s apart); its first event must
    # come through the proxy about as fast as directly, not at the end
    assert direct_total > 2.0 and proxy_total > 2.0
    assert proxy_first < direct_first + 0.5, (proxy_first, direct_first)
    assert proxy_first < proxy_total / 3


def test_fifty_concurrent_streams(proxied):
    upstream, px, out = proxied
    results: dict[int, bytes] = {}
    errors: list[BaseException] = []

    def one(i: int) -> None:
        try:
            with httpx.Client(timeout=60) as c:
                r = c.post(px.url + "/v1/chat/completions", content=chat_body(f"stream number {i}"))
                results[i] = r.content
        except BaseException as exc:  # pragma: no cover - reported below
            errors.append(exc)

    threads = [threading.Thread(target=one, args=(i,)) for i in range(50)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(120)
    assert not errors
    assert len(results) == 50
    assert all(v.rstrip().endswith(b"data: [DONE]") for v in results.values())
    deadline = time.time() + 60
    while len(list(out.glob("*.snapshot"))) < 50 and time.time() < deadline:
        time.sleep(0.2)
    snaps = snapshots(out)
    assert len(snaps) == 50
    assert sorted(s.seq for s in snaps) == list(range(1, 51))
    assert {s.body for s in snaps} == {chat_body(f"stream number {i}") for i in range(50)}
    assert {hashlib.sha256(r.body).digest() for r in upstream.received} == {
        hashlib.sha256(s.body).digest() for s in snaps}


# -- the official SDKs read the scripted replies ---------------------------------------


def test_openai_sdk_chat_and_responses(proxied):
    openai = pytest.importorskip("openai")
    upstream, px, out = proxied
    client = openai.OpenAI(base_url=px.url + "/v1", api_key="sk-test-openai-sdk-key-123")
    text = "".join(ch.choices[0].delta.content or "" for ch in client.chat.completions.create(
        model="gpt-4o", messages=[{"role": "user", "content": "hi"}], stream=True) if ch.choices)
    assert text == "Hello from the scripted upstream."
    r = client.chat.completions.create(model="gpt-4o", messages=[{"role": "user", "content": "TOOL now"}])
    call = r.choices[0].message.tool_calls[0]
    assert call.function.name == "lookup" and call.function.arguments == '{"b":1,"a":[2,3]}'
    resp = client.responses.create(model="gpt-4o", input="hi")
    assert resp.output_text == "Hello from the scripted upstream."
    with client.responses.stream(model="gpt-4o", input="hi") as s:
        final = s.get_final_response()
    assert final.output_text == "Hello from the scripted upstream." and final.usage.input_tokens > 0


def test_anthropic_sdk_stream(proxied):
    anthropic = pytest.importorskip("anthropic")
    upstream, px, out = proxied
    client = anthropic.Anthropic(base_url=px.url, api_key="sk-ant-test-key-123456")
    with client.messages.stream(model="claude-sonnet-4-6", max_tokens=64,
                                messages=[{"role": "user", "content": "TOOL please"}]) as s:
        msg = s.get_final_message()
    assert msg.content[0].type == "tool_use" and msg.content[0].input == {"b": 1, "a": [2, 3]}
    assert msg.usage.input_tokens > 0


def test_gemini_sdk(proxied):
    genai = pytest.importorskip("google.genai")
    upstream, px, out = proxied
    client = genai.Client(api_key="gemini-test-key-123456", http_options={"base_url": px.url})
    r = client.models.generate_content(model="gemini-2.5-flash", contents="hi")
    assert r.text == "Hello from the scripted upstream."
    chunks = list(client.models.generate_content_stream(model="gemini-2.5-flash", contents="hi"))
    assert "".join(c.text or "" for c in chunks) == "Hello from the scripted upstream."
    time.sleep(0.3)
    assert any(s.provider == "gemini" and s.model == "gemini-2.5-flash" for s in snapshots(out))


# -- the command line ---------------------------------------------------------------------


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _cli(*args: str, timeout: float = 60) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "fidelity", *args], capture_output=True, text=True, env=ENV,
                          timeout=timeout, cwd=REPO)


def test_unreachable_upstream_is_one_line_exit_2(tmp_path):
    r = _cli("proxy", "--upstream", f"http://127.0.0.1:{_free_port()}", "--out", str(tmp_path / "o"), "--port", "0")
    assert r.returncode == 2
    assert r.stderr.count("\n") == 1 and "unreachable" in r.stderr and "Traceback" not in r.stderr


def test_port_in_use_is_one_line_exit_2(upstream, tmp_path):
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        s.listen()
        port = s.getsockname()[1]
        r = _cli("proxy", "--upstream", upstream.url, "--out", str(tmp_path / "o"), "--port", str(port))
    assert r.returncode == 2
    assert r.stderr.count("\n") == 1 and f"cannot listen on 127.0.0.1:{port}" in r.stderr


def test_unwritable_folder_is_one_line_exit_2(upstream, tmp_path):
    blocker = tmp_path / "a-file"
    blocker.write_text("not a folder")
    r = _cli("proxy", "--upstream", upstream.url, "--out", str(blocker / "snaps"), "--port", "0")
    assert r.returncode == 2
    assert r.stderr.count("\n") == 1 and "cannot write snapshots" in r.stderr


def test_bad_upstream_url_and_bad_script(tmp_path):
    r = _cli("proxy", "--upstream", "ftp://x", "--out", str(tmp_path))
    assert r.returncode == 2 and "expected an http" in r.stderr
    bad = tmp_path / "s.toml"
    bad.write_text('[[rule]]\nwhen.nope = "x"\nreply.text = "a"\n')
    r = _cli("upstream", "--script", str(bad), "--port", "0")
    assert r.returncode == 2 and r.stderr.count("\n") == 1 and "unknown condition 'nope'" in r.stderr


def test_ctrl_c_flushes_and_exits_0(upstream, tmp_path):
    port = _free_port()
    out = tmp_path / "snaps"
    p = subprocess.Popen([sys.executable, "-m", "fidelity", "proxy", "--upstream", upstream.url, "--out", str(out),
                          "--port", str(port)], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=ENV,
                         cwd=REPO)
    try:
        deadline = time.time() + 60
        while time.time() < deadline:
            try:
                with socket.create_connection(("127.0.0.1", port), timeout=1):
                    break
            except OSError:
                time.sleep(0.2)
        r = httpx.post(f"http://127.0.0.1:{port}/v1/chat/completions", content=chat_body("hello"), timeout=30)
        assert r.status_code == 200
        p.send_signal(signal.SIGINT)
        stdout, stderr = p.communicate(timeout=60)
    finally:
        if p.poll() is None:
            p.kill()
    assert p.returncode == 0, stderr
    assert "#0001 openai-chat gpt-4o 200" in stdout
    assert "1 requests, 1 snapshots" in stderr
    assert [s.body for s in snapshots(out)] == [chat_body("hello")]


def test_fidelity_upstream_fixture(fidelity_upstream):
    up = fidelity_upstream({"defaults": {"text": "fixture reply"}})
    r = httpx.post(up.url + "/v1/chat/completions", content=chat_body("x", stream=False), timeout=30)
    assert r.json()["choices"][0]["message"]["content"] == "fixture reply"
    assert up.received[0].body == chat_body("x", stream=False)
