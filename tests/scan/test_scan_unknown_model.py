"""A model no tokenizer rule names is counted with the nearest family's
tokenizer, marked as an estimate, in ``scan`` as in the builder that counts
its prompts (before, the scan stopped with "unknown model (no tokenizer)"
where the provider names no fallback, such as vLLM)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
BODY = {"model": "acme-brew-1", "messages": [{"role": "system", "content": "You answer questions. " * 50},
                                             {"role": "user", "content": "what failed?"}]}


def test_unknown_model_is_an_estimate(tmp_path: Path) -> None:
    log = tmp_path / "log.jsonl"
    log.write_text(json.dumps({"time": 1.0, "provider": "vllm", "session": "s", "body": BODY}) + "\n"
                   + json.dumps({"time": 2.0, "url": "https://api.openai.com/v1/chat/completions", "session": "t",
                                 "body": BODY}) + "\n")
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    out = subprocess.run([sys.executable, "-m", "fidelity", "scan", str(log), "--json", "--workers", "1"],
                         capture_output=True, text=True, env=env, timeout=120)
    assert out.returncode == 0, out.stderr
    rows = json.loads(out.stdout)["by_model"]
    assert sorted(r["provider"] for r in rows) == ["openai", "vllm"]
    assert all(r["estimated"] and r["tokenizer"].endswith("~nearest") and r["prompt_tokens"] > 100 for r in rows)
