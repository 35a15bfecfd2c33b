"""Importers: HAR 1.2, vcrpy cassettes (YAML and JSON), JSONL logs, DSH
session logs. Exact bytes where the source keeps them, a note where not,
no secret on disk."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from fidelity.capture import snapshot
from fidelity.capture.importers import guess_kind, import_file, write_imported
from fidelity.cli import main as cli_main
from fidelity.errors import InputError

SECRET = "sk-import-SECRET-99999999"
BODY = '{"model":"gpt-4o","messages":[{"role":"user","content":"héllo"}],"tools":[]}'


def _har(entries: list[dict]) -> dict:
    return {"log": {"version": "1.2", "creator": {"name": "test", "version": "1"}, "entries": entries}}


def _entry(body: str | None, size: int | None = None, url: str = "https://api.openai.com/v1/chat/completions") -> dict:
    req: dict = {"method": "POST", "url": url + f"?key={SECRET}", "httpVersion": "HTTP/2",
                 "headers": [{"name": ":authority", "value": "api.openai.com"},
                             {"name": "Authorization", "value": f"Bearer {SECRET}"},
                             {"name": "Cookie", "value": f"session={SECRET}"},
                             {"name": "Content-Type", "value": "application/json"}],
                 "queryString": [{"name": "key", "value": SECRET}], "cookies": [{"name": "session", "value": SECRET}],
                 "headersSize": -1, "bodySize": size if size is not None else len((body or "").encode())}
    if body is not None:
        req["postData"] = {"mimeType": "application/json", "text": body}
    return {"startedDateTime": "2026-01-01T00:00:00Z", "time": 1, "request": req, "response": {}}


def _no_secret(folder: Path) -> None:
    for f in folder.iterdir():
        assert SECRET.encode() not in f.read_bytes()


def test_har_exact_bodies_skips_and_redacts(tmp_path: Path) -> None:
    src = tmp_path / "session.har"
    src.write_text(json.dumps(_har([_entry(BODY), _entry(None), _entry('{"not":"llm"}'), _entry(BODY, size=3)])))
    imp = import_file(src)
    assert imp.skipped == 2 and len(imp.snapshots) == 2
    assert imp.snapshots[0].body == BODY.encode() and imp.snapshots[0].body_exact
    assert not imp.snapshots[1].body_exact and any("bodySize is 3" in w for w in imp.warnings)
    assert ":authority" not in dict(imp.snapshots[0].headers)
    out = tmp_path / "snaps"
    paths = write_imported(imp, out)
    assert snapshot.read(paths[0]).source == "har:session.har#/log/entries/0"
    _no_secret(out)


def test_har_rejects_non_har(tmp_path: Path) -> None:
    src = tmp_path / "x.har"
    src.write_text('{"entries": []}')
    with pytest.raises(InputError, match="not a HAR file"):
        import_file(src)


def _cassette(body: object, headers: dict) -> dict:
    return {"version": 1, "interactions": [{"request": {"body": body, "headers": headers, "method": "POST",
                                                         "uri": "https://api.openai.com/v1/chat/completions"},
                                             "response": {"status": {"code": 200, "message": "OK"}}}]}


def test_cassette_yaml_exact(tmp_path: Path) -> None:
    yaml = pytest.importorskip("yaml")
    src = tmp_path / "c.yaml"
    src.write_text(yaml.safe_dump(_cassette(BODY, {"Content-Type": ["application/json"],
                                                   "authorization": [f"Bearer {SECRET}"],
                                                   "Content-Length": [str(len(BODY.encode()))]}),
                                  allow_unicode=True))
    imp = import_file(src)
    assert imp.snapshots[0].body == BODY.encode() and imp.snapshots[0].body_exact
    write_imported(imp, tmp_path / "out")
    _no_secret(tmp_path / "out")


def test_cassette_binary_body_yaml(tmp_path: Path) -> None:
    yaml = pytest.importorskip("yaml")
    body = BODY.encode()
    src = tmp_path / "c.yml"
    src.write_text(yaml.safe_dump(_cassette(body, {})))  # bytes -> !!binary
    assert "!!binary" in src.read_text()
    assert import_file(src).snapshots[0].body == body


def test_cassette_says_when_it_cannot_hold_the_bytes(tmp_path: Path) -> None:
    spaced = json.dumps(json.loads(BODY))  # what vcrpy's filter_post_data_parameters writes back
    src = tmp_path / "c.json"
    src.write_text(json.dumps(_cassette(spaced, {"User-Agent": ["OpenAI/Python 3.57.0"],
                                                 "Content-Length": ["999"]})))
    imp = import_file(src)
    snap = imp.snapshots[0]
    assert not snap.body_exact
    assert any("vcrpy re-serialised it" in n for n in snap.notes)
    assert any("Content-Length says 999" in w for w in imp.warnings)


def test_cassette_spaced_without_sdk_evidence_warns_only(tmp_path: Path) -> None:
    src = tmp_path / "c.json"
    src.write_text(json.dumps(_cassette(json.dumps(json.loads(BODY)), {})))
    imp = import_file(src)
    assert imp.snapshots[0].body_exact
    assert any("if the client sent compact JSON" in w for w in imp.warnings)


def test_jsonl_raw_lines_envelopes_and_parents(tmp_path: Path) -> None:
    src = tmp_path / "log.jsonl"
    lines = [BODY,
             json.dumps({"custom_id": "r2", "method": "POST", "url": "/v1/chat/completions",
                         "headers": {"api-key": SECRET}, "body": BODY}),
             json.dumps({"url": "https://api.openai.com/v1/chat/completions", "body": json.loads(BODY), "parent": 1}),
             ""]
    src.write_text("\n".join(lines))
    imp = import_file(src)
    assert [s.body for s in imp.snapshots[:2]] == [BODY.encode()] * 2
    assert imp.snapshots[2].body == json.dumps(json.loads(BODY)).encode() and not imp.snapshots[2].body_exact
    out = tmp_path / "out"
    write_imported(imp, out)
    pairs = [(p.path.name[:4], c.path.name[:4]) for p, c in snapshot.pairs_in_folder(out)]
    assert pairs == [("0001", "0002"), ("0001", "0003")]
    _no_secret(out)


def test_jsonl_bad_line(tmp_path: Path) -> None:
    src = tmp_path / "log.jsonl"
    src.write_text(BODY + "\n[1,2]\n")
    with pytest.raises(InputError, match=r"log.jsonl:2: not a JSON object"):
        import_file(src)


def test_guess_kind(tmp_path: Path) -> None:
    (tmp_path / "a.har").write_text("{}")
    (tmp_path / "b.json").write_text('{"interactions": []}')
    assert guess_kind(tmp_path / "a.har") == "har" and guess_kind(tmp_path / "b.json") == "cassette"


def test_cli_prints_warnings(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    src = tmp_path / "c.json"
    src.write_text(json.dumps(_cassette(json.dumps(json.loads(BODY)), {"x-stainless-lang": ["python"]})))
    assert cli_main(["import", str(src), str(tmp_path / "out")]) == 0
    err = capsys.readouterr().err
    assert "does not hold the exact body bytes" in err and "1 without exact body bytes" in err
    assert cli_main(["import", str(tmp_path / "missing.har"), str(tmp_path / "out")]) == 2


def test_dsh_fork_session(shared_real: Path, tmp_path: Path) -> None:
    folder = shared_real / "deepseek-harness/examples/acp-agent/tests/snapshots/subagent-fork-in-process"
    imp = import_file(folder / "session.jsonl")
    assert all(s.provider == "deepseek" and not s.body_exact for s in imp.snapshots)
    paths = write_imported(imp, tmp_path)
    pairs = [(p.path.name, c.path.name) for p, c in snapshot.pairs_in_folder(tmp_path)]
    child = [s for s in imp.snapshots if "session.1.jsonl" in (s.source or "")]
    assert child, "the fork's own requests are imported"
    # the fork's first request pairs with the parent request it forked from, not the one before it
    first_child = paths[imp.snapshots.index(child[0])].name
    assert (paths[0].name, first_child) in pairs
