"""scan prices each break through the one cost function at its request's
time: DeepSeek's off-peak hours cost less than its peak hours, and every
row's dollars are the sum of ``pricing.lost_cost`` over its breaks."""

from __future__ import annotations

import datetime as dt
from pathlib import Path

import orjson

from fidelity import pricing
from fidelity.scan import scan

URL = "https://api.deepseek.com/chat/completions"
WORDS = " ".join(f"rule {i}: keep the answer short and cite the file you read." for i in range(400))


def _line(time: str, session: str, system: str, turns: int) -> bytes:
    messages = [{"role": "system", "content": system}]
    for i in range(turns):
        messages.append({"role": "user", "content": f"question {i} " + "detail " * 50})
        messages.append({"role": "assistant", "content": f"answer {i} " + "more " * 50})
    messages.append({"role": "user", "content": "next"})
    return orjson.dumps({"time": time, "url": URL, "session": session,
                         "body": {"model": "deepseek-v4-flash", "messages": messages}})


def _log(path: Path, hour: int) -> None:
    """Two sessions whose second request rewrites the first turn: a break
    that loses what the first request wrote."""
    lines = []
    for s in ("a", "b"):
        t0 = f"2026-12-01T{hour:02d}:00:0{'1' if s == 'a' else '2'}Z"
        t1 = f"2026-12-01T{hour:02d}:01:0{'1' if s == 'a' else '2'}Z"
        lines.append(_line(t0, s, WORDS + s, 3))
        edited = orjson.loads(_line(t1, s, WORDS + s, 4))
        edited["body"]["messages"][1]["content"] = "question 0 rewritten"
        lines.append(orjson.dumps(edited))
    path.write_bytes(b"\n".join(lines) + b"\n")


def test_off_peak_breaks_cost_what_the_off_peak_rates_say(tmp_path: Path) -> None:
    table = pricing.load()
    price = table.lookup("deepseek", "deepseek-v4-flash")
    results = {}
    for hour in (2, 12):  # 02:00 UTC is in DeepSeek's peak hours, 12:00 is not
        log = tmp_path / f"h{hour}.jsonl"
        _log(log, hour)
        results[hour] = scan([log], workers=1)
    peak, off = results[2]["totals"], results[12]["totals"]
    assert peak["lost_tokens"] == off["lost_tokens"] > 0 and peak["breaks"] == 2
    at = {h: dt.datetime(2026, 12, 1, h, 1, tzinfo=dt.UTC) for h in (2, 12)}
    per_token = {h: pricing.lost_cost(price, 1_000_000, at=at[h]) for h in (2, 12)}
    assert per_token[2] is not None and per_token[12] is not None and per_token[12] < per_token[2]
    for h, tot in ((2, peak), (12, off)):
        assert abs(tot["lost_usd"] - tot["lost_tokens"] * per_token[h] / 1_000_000) < 1e-6
    for row in results[12]["by_cause"] + results[12]["by_day"] + results[12]["by_model"]:
        assert abs(row["lost_usd"] - row["lost_tokens"] * per_token[12] / 1_000_000) < 1e-6


def test_unpriced_model_says_null(tmp_path: Path) -> None:
    log = tmp_path / "x.jsonl"
    _log(log, 12)
    text = log.read_bytes().replace(b"deepseek-v4-flash", b"deepseek-no-such-model")
    log.write_bytes(text)
    res = scan([log], workers=1)
    assert res["totals"]["lost_tokens"] > 0 and res["totals"]["lost_usd"] is None
    assert any("no price for" in n for n in res["notes"])
