"""The scan sets a request apart by the one rule (``server_side.reason``),
the launch weeks of OpenAI's Responses API included: a logged line's
``time`` is when it was sent. The bodies and billed counts are those of
simonw/llm-openai-plugin tests/cassettes/test_openai/test_options[options0].yaml
(2025-03-21: "say hi" billed 27) and of the same body after the change (9)."""

from __future__ import annotations

import json
from pathlib import Path

from fidelity.scan import scan
from fidelity.traffic.sources import read_all

BODY = {"input": [{"role": "user", "content": "say hi"}], "model": "gpt-4o-mini", "stream": False}
URL = "https://api.openai.com/v1/responses"


def _log(tmp_path: Path) -> Path:
    lines = [{"url": URL, "time": "2025-03-21T10:00:00Z", "usage": {"prompt": 27, "cache_read": 0}, "body": BODY},
             {"url": URL, "time": "2025-06-21T10:00:00Z", "usage": {"prompt": 9, "cache_read": 0}, "body": BODY}]
    path = tmp_path / "log.jsonl"
    path.write_text("".join(json.dumps(line) + "\n" for line in lines))
    return path


def test_launch_week_line_is_set_apart_by_the_scan(tmp_path: Path) -> None:
    rep = scan([_log(tmp_path)])["reported"]
    assert rep["requests"] == 1 and rep["reported_prompt"] == 9
    assert [(a["reason"], a["requests"], a["reported_prompt"]) for a in rep["set_apart"]] == [("server template", 1, 27)]


def test_the_reader_sets_the_same_line_apart(tmp_path: Path) -> None:
    exchanges = [ex for group in read_all(_log(tmp_path)) for ex in group]
    assert [ex.set_apart for ex in exchanges] == ["server template", None]
