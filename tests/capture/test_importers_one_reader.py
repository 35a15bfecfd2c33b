"""The importers are a sink of the one reader (:mod:`fidelity.traffic.sources`):
``fidelity import`` and ``replay`` / ``tokens-check`` / ``scan`` read the same
requests from a recording, with the same decisions, and every format the
reader reads can be imported."""

from __future__ import annotations

import ast
import gzip
import json
from collections import Counter
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from fidelity.capture import snapshot
from fidelity.capture.importers import guess_kind, import_file, write_imported
from fidelity.cli import main as cli_main
from fidelity.errors import InputError
from fidelity.traffic import httprr
from fidelity.traffic.apart import NOT_AS_SENT
from fidelity.traffic.sources import Source, entries, kind_of, read

CHAT = "https://api.openai.com/v1/chat/completions"
ANTHROPIC = "https://api.anthropic.com/v1/messages"
BODY = {"model": "gpt-4o", "messages": [{"role": "user", "content": "héllo"}]}
COMPACT = json.dumps(BODY, separators=(",", ":"), ensure_ascii=False)
USAGE = {"prompt_tokens": 2000, "completion_tokens": 5, "total_tokens": 2005,
         "prompt_tokens_details": {"cached_tokens": 1024}}


def _interaction(body: Any, *, uri: str = CHAT, headers: dict[str, list[str]] | None = None, status: int = 200,
                 parsed: Any = None, method: str = "POST") -> dict[str, Any]:
    req: dict[str, Any] = {"method": method, "uri": uri, "headers": headers or {}, "body": body}
    if parsed is not None:
        req["parsed_body"] = parsed
    return {"request": req, "response": {"status": {"code": status, "message": "x"},
                                         "headers": {"Content-Type": ["application/json"],
                                                     "Date": ["Tue, 01 Dec 2026 10:00:00 GMT"]},
                                         "body": {"string": json.dumps({"usage": USAGE})}}}


def _cassette(path: Path, *interactions: dict[str, Any]) -> Path:
    path.write_text(json.dumps({"version": 1, "interactions": list(interactions)}))
    return path


# Each kind of interaction the strategy draws: (body, uri, headers, status, parsed_body, method)
_KINDS: dict[str, tuple[Any, str, dict[str, list[str]], int, Any, str]] = {
    "compact": (COMPACT, CHAT, {}, 200, None, "POST"),
    "spaced": (json.dumps(BODY), CHAT, {"User-Agent": ["OpenAI/Python 1.0"]}, 200, None, "POST"),
    "length ok": (COMPACT, CHAT, {"Content-Length": [str(len(COMPACT.encode()))]}, 200, None, "POST"),
    "length off": (COMPACT, CHAT, {"Content-Length": ["7"]}, 200, None, "POST"),
    "failed": (COMPACT, CHAT, {}, 429, None, "POST"),
    "parsed_body": (None, CHAT, {}, 200, BODY, "POST"),
    "object body": (BODY, CHAT, {}, 200, None, "POST"),
    "embeddings": ('{"model":"e","input":"x"}', "https://api.openai.com/v1/embeddings", {}, 200, None, "POST"),
    "GET": ("", "https://api.openai.com/v1/models", {}, 200, None, "GET"),
    "no body": ("", CHAT, {}, 200, None, "POST"),
    "server tool": (json.dumps({"model": "claude-sonnet-4-5", "max_tokens": 9,
                                "messages": [{"role": "user", "content": "x"}],
                                "tools": [{"type": "web_fetch_20250910", "name": "web_fetch"}]}),
                    ANTHROPIC, {}, 200, None, "POST"),
}


@given(kinds=st.lists(st.sampled_from(sorted(_KINDS)), max_size=8))
def test_import_takes_what_the_one_reader_read(tmp_path_factory: pytest.TempPathFactory, kinds: list[str]) -> None:
    """Every exchange of the one reader that is a model request is a snapshot,
    in order, with its body; every other entry is counted as skipped; what
    the one rule sets apart is counted once, from the same read."""
    path = _cassette(tmp_path_factory.mktemp("c") / "c.json", *(
        _interaction(b, uri=u, headers=h, status=s, parsed=p, method=m) for b, u, h, s, p, m in map(_KINDS.get, kinds)))
    got = import_file(path)
    every = entries(Source("vcr", path))
    taken = [ex for ex in every if ex.body and not (ex.skip or "").startswith("not a generation request")]
    assert [s.body for s in got.snapshots] == [ex.body for ex in taken]
    assert got.skipped == len(every) - len(taken) == len(kinds) - len(got.snapshots)
    assert [s.usage is not None and s.usage["cache_read"] == 1024 for s in got.snapshots] == [True] * len(taken)
    for snap, ex in zip(got.snapshots, taken):
        assert snap.time == "2026-12-01T10:00:00.000Z"
        if ex.reserialised or ex.skip == NOT_AS_SENT:
            assert not snap.body_exact
    apart = Counter(ex.set_apart for ex in read(Source("vcr", path))
                    if ex.set_apart and not ex.set_apart.startswith("not a generation request"))
    assert got.set_apart == apart
    assert (got.set_apart[NOT_AS_SENT], got.set_apart["failed request (HTTP 429)"]) == (
        kinds.count("length off"), kinds.count("failed"))


def test_a_body_kept_as_a_mapping_is_read_as_parsed_json(tmp_path: Path) -> None:
    """Some pydantic-ai cassettes keep the request body itself as parsed JSON:
    the importer refused it and replay dropped it; both now read it as the
    reserialised body it is."""
    path = _cassette(tmp_path / "c.json", _interaction(BODY))
    (ex,) = read(Source("vcr", path))
    assert ex.body == COMPACT.encode() and ex.reserialised and ex.skip is None
    (snap,) = import_file(path).snapshots
    assert snap.body == ex.body and not snap.body_exact
    _cassette(path, _interaction(5))
    with pytest.raises(InputError, match="text or bytes"):
        read(Source("vcr", path))


def test_replay_refuses_a_broken_recording_as_import_does(tmp_path: Path) -> None:
    """The one reader is as strict as the importers were: an entry without a
    request, or a request without a URL, is a one-line error for every command."""
    har = tmp_path / "x.har"
    har.write_text('{"log":{"entries":[1]}}')
    with pytest.raises(InputError, match="/log/entries/0"):
        read(Source("har", har))
    cas = _cassette(tmp_path / "c.json", {"request": {"body": COMPACT}})
    with pytest.raises(InputError, match="no uri"):
        read(Source("vcr", cas))
    assert cli_main(["replay", str(cas)]) == 2


def test_claude_trace_body_objects_keep_the_loggers_bytes(tmp_path: Path) -> None:
    """A body logged as a JSON object is the bytes of that line (escapes and
    spacing as logged), for import and replay alike."""
    logged = '{"model": "claude-sonnet-4-5", "max_tokens": 9, "messages": [{"role": "user", "content": "h\\u00e9"}]}'
    line = ('{"request": {"timestamp": 1764583200.5, "method": "POST", "url": "' + ANTHROPIC
            + '", "headers": {"x-api-key": "sk-ant-SECRET-1234567890"}, "body": ' + logged + '}, '
            '"response": {"status_code": 200, "body": {"usage": {"input_tokens": 5, "output_tokens": 1}}}}')
    path = tmp_path / "log.jsonl"
    path.write_text(line + "\n")
    (ex,) = read(Source("jsonl", path))
    assert ex.body == logged.encode() and ex.reserialised and ex.method == "POST"
    got = import_file(path)
    (snap,) = got.snapshots
    assert snap.body == logged.encode() and not snap.body_exact and snap.time == "2025-12-01T10:00:00.500Z"
    assert snap.source == "jsonl:log.jsonl#line 1" and snap.usage is not None and snap.usage["prompt"] == 5
    write_imported(got, tmp_path / "out")
    assert all(b"SECRET" not in f.read_bytes() for f in (tmp_path / "out").iterdir())


def _ruby_vcr(path: Path) -> Path:
    path.write_text(f"""---
http_interactions:
- request:
    method: post
    uri: {CHAT}
    body:
      encoding: UTF-8
      string: '{COMPACT}'
    headers:
      Authorization:
      - Bearer sk-SECRET-abcdefghijklmnop
  response:
    status:
      code: 200
      message: OK
    headers:
      Content-Type:
      - application/json
    body:
      encoding: UTF-8
      string: '{json.dumps({"usage": USAGE})}'
  recorded_at: Tue, 01 Dec 2026 10:00:00 GMT
recorded_with: VCR 6.3.1
""")
    return path


def test_ruby_vcr_and_httprr_recordings_import(tmp_path: Path) -> None:
    pytest.importorskip("yaml")
    ruby = _ruby_vcr(tmp_path / "chat.yml")
    assert guess_kind(ruby) == "ruby-vcr" == kind_of(ruby)
    (snap,) = import_file(ruby).snapshots
    assert snap.body == COMPACT.encode() and snap.body_exact and snap.source == \
        "ruby-vcr:chat.yml#/http_interactions/0/request"
    assert snap.time == "2026-12-01T10:00:00.000Z" and snap.usage is not None and snap.usage["cache_read"] == 1024
    body = COMPACT.encode()
    req = (f"POST {CHAT} HTTP/1.1\r\nHost: api.openai.com\r\nContent-Encoding: gzip\r\n"
           "Content-Type: application/json\r\n\r\n").encode() + gzip.compress(body, mtime=0)
    resp = b"HTTP/2.0 200 OK\r\nContent-Type: application/json\r\n\r\n" + json.dumps({"usage": USAGE}).encode()
    get = b"GET https://api.openai.com/v1/models HTTP/1.1\r\nHost: api.openai.com\r\n\r\n"
    trace = tmp_path / "chat.httprr"
    trace.write_bytes(httprr.MAGIC + b"".join(b"%d %d\n" % (len(q), len(r)) + q + r
                                              for q, r in ((req, resp), (get, resp))))
    assert guess_kind(trace) == "httprr"
    got = import_file(trace)
    (snap,) = got.snapshots
    assert snap.body == body and snap.source == "httprr:chat.httprr#record 1" and got.skipped == 1
    assert any("Content-Encoding gzip" in n for n in snap.notes)
    out = tmp_path / "out"
    assert cli_main(["import", str(ruby), str(out)]) == 0
    assert [s.body for s in map(snapshot.read, sorted(out.iterdir()))] == [body]
    assert all(b"SECRET" not in f.read_bytes() for f in out.iterdir())


def test_traffic_reads_recordings_without_the_importers() -> None:
    """The reader is the lower module: nothing in ``fidelity.traffic`` imports
    ``fidelity.capture.importers`` (the helpers they shared live in traffic)."""
    root = Path(__file__).resolve().parents[2] / "fidelity" / "traffic"
    for path in sorted(root.glob("*.py")):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.ImportFrom):
                assert "importers" not in (node.module or ""), path.name


def test_the_survey_counts_every_kind_the_one_reader_reads(tmp_path: Path) -> None:
    """Ruby VCR cassettes and httprr traces are surveyed as they are imported;
    what the one rule sets apart is counted from the import's own read."""
    pytest.importorskip("yaml")
    from fidelity.capture.survey import survey

    _ruby_vcr(tmp_path / "chat.yml")
    req = f"POST {CHAT} HTTP/1.1\r\nHost: api.openai.com\r\n\r\n".encode() + COMPACT.encode()
    resp = b"HTTP/2.0 429 Too Many Requests\r\nContent-Type: application/json\r\n\r\n{}"
    (tmp_path / "t.httprr").write_bytes(httprr.MAGIC + b"%d %d\n" % (len(req), len(resp)) + req + resp)
    got = survey(tmp_path)
    assert (got.sources, got.imported, got.requests, got.as_sent) == (2, 2, 2, 2)
    assert got.set_apart == {"failed request (HTTP 429)": 1}
