"""fidelity scan and failed requests: a logged HTTP status of 400 or more
means the provider refused or failed the request, so it is counted apart and
not simulated (it read and wrote nothing the log can show)."""

from __future__ import annotations

import tempfile
from pathlib import Path
from typing import Any

import orjson
from hypothesis import given
from hypothesis import strategies as st

from fidelity.scan import scan

_URL = "https://api.openai.com/v1/chat/completions"
_SYSTEM = "You are a careful assistant. " + "Rules follow. " * 400


def _body(turns: int) -> dict[str, Any]:
    msgs: list[dict[str, Any]] = [{"role": "system", "content": _SYSTEM}]
    for i in range(turns):
        msgs += [{"role": "user", "content": f"question {i} " + "word " * 120},
                 {"role": "assistant", "content": f"answer {i} " + "text " * 120}]
    return {"model": "gpt-4.1", "messages": msgs}


def _line(t: float, session: str, turns: int, **extra: Any) -> bytes:
    return orjson.dumps({"time": 1_764_500_000.0 + t, "url": _URL, "session": session, "body": _body(turns),
                         **extra}) + b"\n"


def _scan(tmp: Path, lines: list[bytes]) -> dict[str, Any]:
    log = tmp / "log.jsonl"
    log.write_bytes(b"".join(lines))
    return scan([log], workers=1)


def _without_failed(doc: dict[str, Any]) -> dict[str, Any]:
    out = orjson.loads(orjson.dumps(doc))
    out["totals"].pop("failed_requests")
    out.pop("failed_requests")
    return out


def test_a_rate_limited_request_is_counted_apart_and_its_retry_reads_the_cache(tmp_path: Path) -> None:
    ok = [_line(0, "s", 1), _line(10, "s", 2)]
    with_429 = [ok[0], _line(9, "s", 2, status=429, response={"error": {"type": "rate_limit_error"}}), ok[1]]
    plain, failed = _scan(tmp_path, ok), _scan(tmp_path, with_429)
    assert failed["failed_requests"] == {"total": 1, "by_status": {"429": 1},
                                         "by_model": [{"provider": "openai", "model": "gpt-4.1", "requests": 1}]}
    assert failed["totals"]["failed_requests"] == 1 and plain["totals"]["failed_requests"] == 0
    assert failed["totals"]["requests"] == 2 and failed["totals"]["read_tokens"] > 0
    assert _without_failed(failed) == _without_failed(plain)


def test_status_from_the_envelope_and_its_forms(tmp_path: Path) -> None:
    lines = [
        _line(0, "a", 1, response={"status_code": 500, "body": {"error": "overloaded"}}),  # claude-trace
        _line(1, "b", 1, status="503"),
        _line(2, "c", 1, status=200),
        _line(3, "d", 1, status=True),  # not a status
        _line(4, "e", 1, status=99),  # not an HTTP status
        _line(5, "f", 1, response={"status": 404}),
    ]
    r = _scan(tmp_path, lines)
    assert r["failed_requests"]["by_status"] == {"404": 1, "500": 1, "503": 1}
    assert r["totals"]["requests"] == 3


def _cassette(tmp: Path, codes: tuple[int, ...]) -> Path:
    """A vcrpy cassette of one request per status code."""
    body = orjson.dumps(_body(1)).decode().replace("'", "''")
    inter = ("- request:\n    body: '{body}'\n    headers: {{}}\n    method: POST\n"
             "    uri: https://api.openai.com/v1/chat/completions\n"
             "  response:\n    body:\n      string: '{{}}'\n    headers: {{}}\n"
             "    status:\n      code: {code}\n      message: X\n")
    cassette = tmp / "c.yaml"
    cassette.write_text("interactions:\n" + "".join(inter.format(body=body, code=c) for c in codes) + "version: 1\n")
    return cassette


def test_a_cassette_response_status_counts(tmp_path: Path) -> None:
    r = scan([_cassette(tmp_path, (429, 200))], workers=1)
    assert r["failed_requests"]["by_status"] == {"429": 1}
    assert r["totals"]["requests"] == 1


@st.composite
def _logs(draw: st.DrawFn) -> tuple[list[bytes], list[bytes]]:
    """A log of up to three sessions, and the same log with failed requests
    (copies of a request, or new ones, with an error status) put in."""
    lines: list[bytes] = []
    mixed: list[bytes] = []
    turns: dict[str, int] = {}
    t = 0.0
    for _ in range(draw(st.integers(1, 7))):
        session = draw(st.sampled_from("abc"))
        t += draw(st.sampled_from([1.0, 30.0, 700.0]))
        turns[session] = turns.get(session, 0) + draw(st.integers(0, 1)) or 1
        if draw(st.booleans()):
            status = draw(st.sampled_from([400, 429, 500, 529]))
            mixed.append(_line(t - 0.5, session, turns[session] + draw(st.integers(0, 2)), status=status))
        line = _line(t, session, turns[session])
        lines.append(line)
        mixed.append(line)
    return lines, mixed


@given(_logs())
def test_failed_requests_change_nothing_but_their_count(logs: tuple[list[bytes], list[bytes]]) -> None:
    plain, mixed = logs
    with tempfile.TemporaryDirectory() as d:
        a, b = _scan(Path(d), plain), _scan(Path(d), mixed)
    assert b["failed_requests"]["total"] == len(mixed) - len(plain)
    assert _without_failed(a) == _without_failed(b)


def test_replay_skips_a_failed_request_too(tmp_path: Path) -> None:
    from fidelity.replay import read_recordings

    (exchanges,) = read_recordings(_cassette(tmp_path, (529, 200)))
    assert [e.skip for e in exchanges] == ["failed request (HTTP 529)", None]
