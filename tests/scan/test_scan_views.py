"""The scan's views (console, Markdown, HTML, GitHub) write every rate and
dollar figure through :mod:`fidelity.formats`, as replay, tokens-check and
calibrate do: one spelling of a percent across commands."""

from __future__ import annotations

import io
import os
import subprocess
import sys
from pathlib import Path

import orjson
from rich.console import Console

from fidelity import formats
from fidelity.scan import scan, views

_REPO = Path(__file__).resolve().parents[2]
_SYSTEM = "You are a careful assistant. " + "Rules follow. " * 400


def _line(second: int, system: str, turns: int) -> bytes:
    msgs = [{"role": "system", "content": system}]
    for i in range(turns):
        msgs += [{"role": "user", "content": f"question {i} " + "word " * 300},
                 {"role": "assistant", "content": f"answer {i} " + "text " * 300}]
    return orjson.dumps({"time": f"2026-11-30T12:00:{second:02d}Z", "url": "https://api.openai.com/v1/chat/completions",
                         "session": "s", "body": {"model": "gpt-4.1", "messages": msgs}}) + b"\n"


def _console(doc: dict) -> str:
    buf = io.StringIO()
    Console(file=buf, width=240, color_system=None).print(views.console_view(doc))
    return buf.getvalue()


def test_every_scan_view_writes_rates_and_dollars_as_formats_does(tmp_path: Path) -> None:
    log = tmp_path / "t.jsonl"
    log.write_bytes(_line(0, _SYSTEM, 1) + _line(1, _SYSTEM, 2) + _line(2, "Now 12:00:02. " + _SYSTEM, 3))
    doc = scan([log], workers=1)
    t = doc["totals"]
    assert t["breaks"] == 1 and 0 < t["predicted_hit_rate"] < 1
    rate = f"predicted cache hit rate {formats.percent(t['predicted_hit_rate'])}:"
    lost = f"{formats.usd(t['lost_usd'])} in 1 request(s)"
    model = doc["by_model"][0]
    for text in (_console(doc), views.markdown(doc), views.html_page(doc), views.github(doc)):
        assert rate in text and lost in text
        assert formats.percent(model["predicted_hit_rate"]) in text
        assert " %" not in text
    # a model without logged usage has no reported rate: the scan says so, in words
    assert "not logged" in views.markdown(doc)


def test_a_reader_that_goes_away_is_not_a_regression(tmp_path: Path) -> None:
    """``fidelity scan LOG | head``: the console view goes to a pipe whose reader
    has gone; exit 0 and nothing on stderr, as every command (1 would read as a
    regression to a CI step)."""
    log = tmp_path / "t.jsonl"
    log.write_bytes(_line(0, _SYSTEM, 1) + _line(1, _SYSTEM, 2))
    read_end, write_end = os.pipe()
    os.close(read_end)
    try:
        done = subprocess.run([sys.executable, "-m", "fidelity", "scan", str(log), "--workers", "1"], stdout=write_end,
                              stderr=subprocess.PIPE, env={**os.environ, "PYTHONPATH": str(_REPO)}, timeout=120,
                              check=False)
    finally:
        os.close(write_end)
    assert (done.returncode, done.stderr) == (0, b"")
