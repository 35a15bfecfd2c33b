"""``fidelity diff`` counts a request with the tokenizer every command
uses (:func:`fidelity.cache.prompts.prompt_tokenizer`): a model no rule
names gets the nearest family's, marked as an estimate, in ``diff`` as in
``replay`` (before, ``diff`` took the provider's fallback unmarked, or
stopped with an error where the provider has none)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from fidelity.capture import snapshot
from fidelity.diff import compare
from fidelity.replay import replay

REPO = Path(__file__).resolve().parents[2]
MODEL = "acme-brew-1"  # no tokenizer rule names it
URL = "http://127.0.0.1:8000/v1/chat/completions"
SYSTEM = "You answer questions about the build. " * 200


def _body(*turns: str) -> bytes:
    msgs = [{"role": "system", "content": SYSTEM}]
    for i, text in enumerate(turns):
        msgs.append({"role": "user" if i % 2 == 0 else "assistant", "content": text})
    return json.dumps({"model": MODEL, "messages": msgs}).encode()


PARENT = _body("what failed?")
CHILD = _body("what failed?", "the linker", "which symbol?")


def _folder(tmp: Path) -> Path:
    """Both requests as proxy snapshots one second apart, with the usage
    a server reported (replay reads recordings with usage)."""
    for seq, (body, time) in enumerate([(PARENT, "2026-01-01T00:00:00Z"), (CHILD, "2026-01-01T00:00:01Z")], 1):
        snap = snapshot.from_request(method="POST", url=URL, headers={"content-type": "application/json"},
                                     body=body, seq=seq, time=time,
                                     usage={"prompt": 500, "cache_read": 0, "cache_write": None, "output": 5,
                                            "source": "json"})
        snapshot.write(tmp, snap, name=f"{seq}.snapshot")
    return tmp


def test_unknown_model_counts_alike_in_diff_and_replay(tmp_path: Path) -> None:
    got = compare(PARENT, CHILD, endpoint=URL)
    rows = [r for r in replay(_folder(tmp_path)).rows if r.predicted is not None]
    assert [r.model for r in rows] == [MODEL, MODEL]
    child = rows[1]
    assert got.tokens.estimated and child.estimated
    assert got.tokens.tokenizer.endswith("~nearest")
    assert (got.tokens.parent_prompt, got.tokens.child_prompt) == (rows[0].predicted.prompt, child.predicted.prompt)
    assert got.cache.predicted_cached == child.predicted.cache_read > 0


@pytest.mark.parametrize("dialect", ["vllm", "openai-chat"])
def test_diff_cli_estimates_an_unknown_model(tmp_path: Path, dialect: str) -> None:
    """Also where the provider names no fallback tokenizer (vLLM): exit 0,
    the JSON marked as an estimate."""
    (tmp_path / "p.json").write_bytes(PARENT)
    (tmp_path / "c.json").write_bytes(CHILD)
    env = dict(os.environ, PYTHONPATH=str(REPO))
    out = subprocess.run([sys.executable, "-m", "fidelity", "diff", str(tmp_path / "p.json"), str(tmp_path / "c.json"),
                          "--provider", dialect, "--json"], capture_output=True, text=True, env=env, cwd=REPO)
    assert out.returncode == 0, out.stderr
    doc = json.loads(out.stdout)
    assert doc["model"] == MODEL and doc["tokens"]["estimated"] is True
