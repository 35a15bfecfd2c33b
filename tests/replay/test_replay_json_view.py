"""The ``--json`` views of replay, tokens-check and calibrate go through the one
document writer (:func:`fidelity.formats.json_doc`): a recording whose file
name is not valid UTF-8 is still printed, not a traceback."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from fidelity.capture import snapshot
from fidelity.cli import main


def _snap(path: Path, seq: int, text: str) -> None:
    body = json.dumps({"messages": [{"role": "user", "content": text}], "model": "gpt-4o"},
                      separators=(",", ":")).encode()
    meta = snapshot.Snapshot(body=body, seq=seq, provider="openai-chat", family="openai", model="gpt-4o").metadata()
    meta["time"] = f"2026-11-30T12:00:0{seq}Z"
    path.write_bytes(json.dumps(meta, separators=(",", ":")).encode() + b"\n" + body)


def test_replay_json_names_a_file_whose_name_is_not_utf8(tmp_path: Path, capsysbinary: pytest.CaptureFixture[bytes]) -> None:
    # on Linux a name byte that is not UTF-8 comes back from the file system as a lone surrogate
    name = os.fsdecode(b"caf\xff.snapshot")
    try:
        _snap(tmp_path / name, 1, "alpha " * 1500)
    except (UnicodeEncodeError, OSError):
        pytest.skip("this file system refuses a name that is not UTF-8")
    _snap(tmp_path / "0002.snapshot", 2, "alpha " * 1500 + "more")
    assert main(["replay", str(tmp_path), "--json"]) == 0
    out = capsysbinary.readouterr().out
    assert out.isascii() and out.endswith(b"\n")
    sources = [r["source"] for r in json.loads(out)["requests"]]
    assert any(s.endswith(name) for s in sources), sources
