"""``fidelity diff --at TIME``: the lost tokens priced at the rate in force
when the child is sent (DeepSeek's off-peak hours), and the JSON says which."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
WORDS = " ".join(f"rule {i}: keep answers short." for i in range(600))


def _bodies(tmp: Path) -> tuple[Path, Path]:
    parent = {"model": "deepseek-v4-flash", "messages": [{"role": "system", "content": WORDS},
                                                         {"role": "user", "content": "hi"}]}
    child = json.loads(json.dumps(parent))
    child["messages"][0]["content"] = WORDS.replace("rule 500:", "rule 500 (edited):")
    p, c = tmp / "p.json", tmp / "c.json"
    p.write_text(json.dumps(parent))
    c.write_text(json.dumps(child))
    return p, c


def _diff(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "fidelity", "diff", *args], capture_output=True, text=True,
                          env={"PYTHONPATH": str(ROOT)})


def test_at_prices_the_off_peak_rate(tmp_path: Path) -> None:
    p, c = _bodies(tmp_path)
    costs = {}
    for when in (None, "2026-12-01T02:30Z", "2026-12-01T12:00:00+00:00", "2026-12-01T12:00"):
        out = _diff(str(p), str(c), "--json", *(["--at", when] if when else []))
        assert out.returncode == 0, out.stderr
        doc = json.loads(out.stdout)
        assert doc["cache"]["lost"] > 0
        costs[when] = doc["cost"]
    assert costs[None]["rate"] == costs["2026-12-01T02:30Z"]["rate"] == "peak"  # 01:00-04:00 UTC is peak
    assert costs["2026-12-01T12:00:00+00:00"]["rate"] == "off-peak" == costs["2026-12-01T12:00"]["rate"]
    # DeepSeek V4 Flash: input - cache read is 0.294 USD per million at peak, 0.147 off-peak
    peak, off = costs[None]["usd_lost_per_request"], costs["2026-12-01T12:00"]["usd_lost_per_request"]
    assert abs(peak - 2 * off) < 1e-7 and off > 0


def test_bad_time_is_one_error_exit_2(tmp_path: Path) -> None:
    p, c = _bodies(tmp_path)
    out = _diff(str(p), str(c), "--at", "tomorrow")
    assert out.returncode == 2 and "not an ISO 8601 time: 'tomorrow'" in out.stderr
    assert "Traceback" not in out.stderr


def test_one_rate_rows_say_null(tmp_path: Path) -> None:
    p, c = _bodies(tmp_path)
    for f in (p, c):
        f.write_text(f.read_text().replace("deepseek-v4-flash", "gpt-4o"))
    doc = json.loads(_diff(str(p), str(c), "--json", "--at", "2026-12-01T12:00Z").stdout)
    assert doc["cost"] is not None and doc["cost"]["rate"] is None
