"""Go httprr traces (rsc.io/httprr), as tmc/langchaingo's tests record them."""

from __future__ import annotations

import gzip
import json
import subprocess
import sys
from datetime import UTC, datetime
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from fidelity.errors import InputError
from fidelity.replay import replay
from fidelity.tokens_check import check
from fidelity.traffic import httprr
from fidelity.traffic.sources import list_sources, read_all

ANTHROPIC = "https://api.anthropic.com/v1/messages"


def _trace(*records: tuple[bytes, bytes]) -> bytes:
    return httprr.MAGIC + b"".join(b"%d %d\n" % (len(q), len(r)) + q + r for q, r in records)


def _request(body: bytes, url: str = ANTHROPIC) -> bytes:
    # the shape of tmc/langchaingo llms/anthropic/internal/anthropicclient/testdata/
    # TestClient_CreateMessage.httprr: CRLF headers, one rewritten with a bare LF
    return (f"POST {url} HTTP/1.1\r\nHost: api.anthropic.com\r\nUser-Agent: langchaingo-httprr\n"
            f"Content-Length: {len(body)}\r\nContent-Type: application/json\r\n\r\n").encode() + body


def _response(body: bytes, *, ctype: str = "application/json", extra: str = "", chunked: bool = False) -> bytes:
    if chunked:
        body = b"".join(b"%x\r\n" % len(body[i:i + 7]) + body[i:i + 7] + b"\r\n"
                        for i in range(0, len(body), 7)) + b"0\r\n\r\n"
    length = "Transfer-Encoding: chunked\r\n" if chunked else f"Content-Length: {len(body)}\r\n"
    return (f"HTTP/2.0 200 OK\r\n{length}Content-Type: {ctype}\r\n{extra}"
            "Date: Mon, 18 Aug 2025 12:42:58 GMT\r\n\r\n").encode() + body


BODY = json.dumps({"model": "claude-3-opus-20240229", "max_tokens": 100,
                   "messages": [{"role": "user", "content": "Hello, how are you?"}]}, separators=(",", ":")).encode()
USAGE = {"input_tokens": 13, "cache_creation_input_tokens": 0, "cache_read_input_tokens": 0, "output_tokens": 35}


def test_a_trace_is_read_by_every_command(tmp_path: Path) -> None:
    resp = json.dumps({"id": "msg_1", "type": "message", "model": "claude-3-opus-20240229", "usage": USAGE}).encode()
    sse = (b'event: message_start\ndata: {"type":"message_start","message":{"model":"claude-3-opus-20240229",'
           b'"usage":{"input_tokens":15,"cache_read_input_tokens":1024,"cache_creation_input_tokens":0,'
           b'"output_tokens":1}}}\n\nevent: message_delta\ndata: {"type":"message_delta","usage":{"output_tokens":9}}\n\n')
    path = tmp_path / "testdata" / "TestClient_CreateMessage.httprr"
    path.parent.mkdir()
    path.write_bytes(_trace(
        (_request(BODY), _response(gzip.compress(resp, mtime=0), extra="Content-Encoding: gzip\r\n")),
        (b"GET https://api.anthropic.com/v1/models HTTP/1.1\r\nHost: api.anthropic.com\r\n\r\n",
         _response(b"{}")),
        (_request(BODY), _response(sse, ctype="text/event-stream", chunked=True))))
    before = path.read_bytes()
    assert [s.kind for s in list_sources(tmp_path)] == ["httprr"]
    (first, second), = read_all(path)
    assert first.url == ANTHROPIC and first.dialect == "anthropic-messages" and first.status == 200
    assert first.body == BODY and first.where == "record 1"
    assert dict(first.usage or {}) == {"prompt": 13, "cache_read": 0, "cache_write": 0, "output": 35,
                                       "source": "json"}
    assert first.time == datetime(2025, 8, 18, 12, 42, 58, tzinfo=UTC).timestamp()
    assert second.where == "record 3" and dict(second.usage or {})["cache_read"] == 1024
    assert [row.reported.prompt for row in replay(path).rows] == [13, 1039]
    assert [r.billed for r in check([path]).rows] == [13, 1039]
    assert path.read_bytes() == before


@pytest.mark.parametrize("data, problem", [
    (b"httprr trace v2\n", "not an httprr trace"),
    (httprr.MAGIC + b"12 x\nabc", "two byte counts"),
    (httprr.MAGIC + b"40 10\nPOST / HTTP/1.1\r\n", "truncated"),
    (_trace((_request(BODY), b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n")), "chunk size"),
])
def test_a_broken_trace_is_one_line_naming_the_file(tmp_path: Path, data: bytes, problem: str) -> None:
    path = tmp_path / "bad.httprr"
    path.write_bytes(data)
    with pytest.raises(InputError, match=problem):
        read_all(path)
    run = subprocess.run([sys.executable, "-m", "fidelity", "tokens-check", str(path)],
                         capture_output=True, text=True, timeout=120)
    assert run.returncode == 2 and "Traceback" not in run.stderr
    assert str(path) in run.stderr and problem in run.stderr and len(run.stderr.strip().splitlines()) == 1


@given(st.lists(st.tuples(st.binary(max_size=300), st.binary(max_size=300)), max_size=6))
def test_records_round_trip(records: list[tuple[bytes, bytes]]) -> None:
    assert httprr.records(_trace(*records), "t.httprr") == records


@given(st.binary(max_size=2000), st.integers(min_value=1, max_value=50))
def test_a_chunked_body_reads_as_sent(body: bytes, size: int) -> None:
    chunks = b"".join(b"%x;ext=1\r\n" % len(body[i:i + size]) + body[i:i + size] + b"\r\n"
                      for i in range(0, len(body), size))
    raw = b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n" + chunks + b"0\r\nX-Trailer: 1\r\n\r\n"
    line, headers, got = httprr.message(raw, "t.httprr")
    assert (line, headers, got) == ("HTTP/1.1 200 OK", [("transfer-encoding", "chunked")], body)
