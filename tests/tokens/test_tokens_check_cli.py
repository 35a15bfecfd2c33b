"""``fidelity tokens-check`` that scores nothing says why, in one line, with
exit 2, as ``fidelity replay`` does on the same input; never an empty table
and exit 0."""

from __future__ import annotations

import contextlib
import io
from pathlib import Path

import orjson
import pytest

from fidelity.cli import main


def _cli(argv: list[str]) -> tuple[int, str, str]:
    raw, err = io.BytesIO(), io.StringIO()
    out = io.TextIOWrapper(raw, encoding="utf-8")
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        rc = main(argv)
    out.flush()
    return rc, raw.getvalue().decode("utf-8"), err.getvalue()


def _trace_line(model: str) -> bytes:
    body = {"model": model, "messages": [{"role": "user", "content": "hello there"}]}
    response = {"id": "r1", "model": model, "choices": [{"message": {"role": "assistant", "content": "hi"}}],
                "usage": {"prompt_tokens": 11, "completion_tokens": 2, "total_tokens": 13}}
    return orjson.dumps({"request": {"url": "https://api.openai.com/v1/chat/completions", "body": body},
                         "response": {"body": response}})


JUNK = {
    "malformed.jsonl": b'{"request": {"url": ',
    "malformed.json": b"{not json",
    "junk.bin": bytes(range(256)) * 3,
    "empty.jsonl": b"",
}


@pytest.mark.parametrize("name", sorted(JUNK))
def test_unreadable_input_exits_2_as_replay_does(tmp_path: Path, name: str) -> None:
    path = tmp_path / name
    path.write_bytes(JUNK[name])
    rc, out, err = _cli(["tokens-check", str(path)])
    replay_rc, _, replay_err = _cli(["replay", str(path)])
    assert (rc, replay_rc) == (2, 2), (out, err)
    assert err.count("\n") == 1 and str(path) in err and "Traceback" not in err
    if "JSON" in replay_err:  # the file replay names, tokens-check names with the same problem
        assert err.split(": error: ", 1)[1] == replay_err.split(": error: ", 1)[1]
    else:
        assert "no recorded request with billed prompt usage in 1 file(s)" in err
    assert path.read_bytes() == JUNK[name]  # inputs never modified


def test_a_folder_of_junk_and_an_empty_folder_exit_2(tmp_path: Path) -> None:
    (tmp_path / "empty").mkdir()
    rc, out, err = _cli(["tokens-check", str(tmp_path / "empty"), "--json"])
    assert rc == 2 and out == "" and "in 0 file(s)" in err and err.count("\n") == 1
    junk = tmp_path / "junk"
    junk.mkdir()
    for name in ("junk.bin", "malformed.json", "empty.jsonl"):
        (junk / name).write_bytes(JUNK[name])
    rc, out, err = _cli(["tokens-check", str(junk)])
    assert rc == 2 and out == "" and "in 3 file(s)" in err


def test_requests_read_but_none_scorable_say_why(tmp_path: Path) -> None:
    trace = tmp_path / "trace.jsonl"
    trace.write_bytes(_trace_line("") + b"\n" + _trace_line("") + b"\n")
    rc, out, err = _cli(["tokens-check", str(trace)])
    assert rc == 2 and out == "" and err.count("\n") == 1
    assert "read 2 recorded request(s) with billed usage, none could be scored: no model named (2)" in err


def test_an_unknown_model_is_scored_with_the_nearest_family_marked_estimated(tmp_path: Path) -> None:
    """Issue 31: a model no rule names (a gateway's) is counted, as an estimate, not dropped."""
    trace = tmp_path / "trace.jsonl"
    trace.write_bytes(_trace_line("mystery-model-1") + b"\n")
    rc, out, err = _cli(["tokens-check", str(trace), "--json"])
    doc = orjson.loads(out)
    assert rc == 0 and [g["requests"] for g in doc["groups"]] == [1]
    assert all(g["estimated"] for g in doc["groups"])


def test_a_scorable_request_still_prints_its_table(tmp_path: Path) -> None:
    trace = tmp_path / "trace.jsonl"
    trace.write_bytes(_trace_line("gpt-4o") + b"\n")
    rc, out, err = _cli(["tokens-check", str(trace), "--json"])
    doc = orjson.loads(out)
    assert rc == 0 and err == "" and [g["requests"] for g in doc["groups"]] == [1]
