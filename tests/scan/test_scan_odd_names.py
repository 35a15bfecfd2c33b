"""A recording whose file name is not valid UTF-8 is scanned like any other."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

CASSETTE = """interactions:
- request:
    body: '{body}'
    headers: {{Content-Type: [application/json]}}
    method: POST
    uri: https://api.openai.com/v1/chat/completions
  response:
    body: {{string: '{{"usage": {{"prompt_tokens": 9, "completion_tokens": 1}}}}'}}
    headers: {{Content-Type: [application/json]}}
    status: {{code: 200, message: OK}}
version: 1
"""


@pytest.mark.skipif(sys.platform == "darwin", reason="macOS file systems refuse names that are not UTF-8")
def test_a_file_name_that_is_not_utf8_is_scanned(tmp_path: Path) -> None:
    body = json.dumps({"model": "gpt-4o", "messages": [{"role": "user", "content": "hello there"}]})
    odd = os.fsdecode(b"caf\xe9.yaml")
    (tmp_path / odd).write_text(CASSETTE.format(body=body))
    (tmp_path / "plain.yaml").write_text(CASSETTE.format(body=body))
    run = subprocess.run([sys.executable, "-m", "fidelity", "scan", str(tmp_path), "--json"],
                         capture_output=True, text=True, timeout=300)
    assert run.returncode == 0 and "Traceback" not in run.stderr, run.stderr
    assert json.loads(run.stdout)["totals"]["requests"] == 2
