"""The one parser of a request-log line (:mod:`fidelity.traffic.requestlog`)
and its sinks: the scan's records, the one reader's exchanges (replay,
tokens-check) and ``fidelity import``'s snapshots."""

from __future__ import annotations

import base64
import tempfile
from pathlib import Path

import orjson
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from fidelity.capture.importers import import_file
from fidelity.errors import InputError
from fidelity.scan.records import parse_record
from fidelity.traffic.exchange import iso_seconds, iso_text
from fidelity.traffic.requestlog import BadLine, parse
from fidelity.traffic.sources import Source, entries, read

_TEXT = st.text(st.characters(codec="utf-8", exclude_categories=("Cs",)), max_size=30)
_URLS = st.sampled_from(["https://api.openai.com/v1/chat/completions", "https://api.anthropic.com/v1/messages",
                         "https://api.deepseek.com/chat/completions"])


@st.composite
def _lines(draw: st.DrawFn) -> bytes:
    url = draw(_URLS)
    body: dict[str, object] = {"model": draw(st.sampled_from(["gpt-4o", "claude-sonnet-4-5", "deepseek-chat"])),
                               "messages": [{"role": "user", "content": draw(_TEXT)}]}
    if "anthropic" in url:
        body["max_tokens"] = 10
    form = draw(st.sampled_from(["object", "text", "base64", "bare"]))
    raw = orjson.dumps(body)
    env: dict[str, object] = {}
    if form == "object":
        env["body"] = body
    elif form == "text":
        env["body"] = raw.decode()
    elif form == "base64":
        env["body_base64"] = base64.b64encode(raw).decode()
    else:
        return raw
    env["url"] = url
    if draw(st.booleans()):
        env["session"] = draw(st.sampled_from(["s1", "s2"]))
    if draw(st.booleans()):
        env[draw(st.sampled_from(["time", "timestamp", "logged_at"]))] = draw(st.sampled_from(
            ["2026-11-30T12:00:00.125Z", 1764504000, "Sun, 30 Nov 2026 12:00:00 GMT"]))
    return orjson.dumps(env)


@settings(deadline=None)
@given(_lines())
def test_scan_records_reader_exchanges_and_imported_snapshots_agree(line: bytes) -> None:
    # one parser, three sinks: each carries the line's body bytes, url, session and time
    got = parse(line)
    rec = parse_record(line)
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "log.jsonl"
        path.write_bytes(line + b"\n")
        (ex,) = read(Source("jsonl", path))
        (snap,) = import_file(path).snapshots
    scanned = rec.raw_body if rec.raw_body is not None else orjson.dumps(rec.body)
    assert scanned == ex.body == snap.body == got.body_bytes()
    assert rec.url == (ex.url or "") == snap.url == got.url
    assert rec.session == got.session and ex.session == (got.session or str(path))
    assert rec.time == ex.time == got.time
    assert snap.time == iso_text(got.time)
    assert snap.body_exact == (got.raw is not None)


def test_replay_reads_request_log_lines(tmp_path: Path) -> None:
    # before the one parser, the one reader took only claude-trace lines: a request log read as empty
    log = tmp_path / "log.jsonl"
    body = {"model": "gpt-4o", "messages": [{"role": "user", "content": "hi"}]}
    log.write_bytes(orjson.dumps(body) + b"\n" + orjson.dumps(
        {"body": body, "url": "https://api.openai.com/v1/chat/completions", "time": "2026-11-30T12:00:00Z",
         "usage": {"prompt_tokens": 8, "completion_tokens": 1}}) + b"\n" + b'{"note": "not a request"}\n')
    got = entries(Source("jsonl", log))
    assert [ex.where for ex in got] == ["line 1", "line 2", "line 3"]
    assert got[2].body == b""
    assert got[1].time == iso_seconds("2026-11-30T12:00:00Z") and got[1].usage is not None
    assert got[1].usage["prompt"] == 8 and got[1].reserialised and not got[0].reserialised
    assert len(read(Source("jsonl", log))) == 2


def test_a_bad_line_is_counted_by_the_scan_and_named_by_the_reader(tmp_path: Path) -> None:
    line = b'{"body": {"model": "gpt-4o", "messages": []}, "time": "yesterday"}'
    with pytest.raises(BadLine, match="bad time"):
        parse_record(line)
    log = tmp_path / "log.jsonl"
    log.write_bytes(line + b"\n")
    with pytest.raises(InputError, match=r"log.jsonl:1: bad time"):
        entries(Source("jsonl", log))


def test_headers_and_parent_are_read() -> None:
    got = parse(b'{"body": "{\\"model\\":\\"m\\",\\"messages\\":[]}", "headers": [["a", "b"]], "parent": 1}')
    assert got.headers == (("a", "b"),) and got.parent == (1,) and got.raw == b'{"model":"m","messages":[]}'
    with pytest.raises(BadLine, match="bad headers"):
        parse(b'{"body": {"messages": []}, "headers": 3}')
    assert parse(b'{"body": {"messages": []}}').parent == ()


def test_a_bare_body_needs_a_request_member_not_a_model() -> None:
    assert parse(b'{"messages": [{"role": "user", "content": "x"}]}').raw is not None
    with pytest.raises(BadLine, match="no body"):
        parse(b'{"model": "gpt-4o"}')
