"""fidelity scan across gaps in time: a request that came when nothing of
its predecessor's cache was alive lost nothing to what it changed, and a
large partition split at such gaps gives the scan the whole partition gives."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import orjson
import pytest
from hypothesis import given
from hypothesis import strategies as st

from fidelity import cache
from fidelity.cache._breakpoints import LONGEST_MARKER_TTL
from fidelity.cache.assemble import _TTLS
from fidelity.scan import scan

_T0 = 1_764_500_000.0  # 2025-11-30T10:53:20Z
_OPENAI = "https://api.openai.com/v1/chat/completions"
_ANTHROPIC = "https://api.anthropic.com/v1/messages"
_SYSTEM = ("You are a careful assistant. " + "Rules follow. " * 400, "You are a careless assistant. " + "Rules follow. " * 400)


def _turns(n: int) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    for i in range(n):
        out.append({"role": "user", "content": f"question {i} " + "word " * 120})
        out.append({"role": "assistant", "content": f"answer {i} " + "text " * 120})
    return out


def _body(provider: str, system: int, turns: int, ttl: str | None, system_ttl: str | None = None) -> dict[str, Any]:
    msgs = _turns(turns)
    if provider == "openai":
        return {"model": "gpt-4.1", "messages": [{"role": "system", "content": _SYSTEM[system]}, *msgs]}
    mark: dict[str, Any] = {"type": "ephemeral", **({"ttl": ttl} if ttl else {})}
    system_mark: dict[str, Any] = {"type": "ephemeral", **({"ttl": system_ttl or ttl} if system_ttl or ttl else {})}
    last = msgs[-1]
    msgs[-1] = {"role": last["role"], "content": [{"type": "text", "text": last["content"], "cache_control": mark}]}
    return {"model": "claude-sonnet-4-5", "max_tokens": 100,
            "system": [{"type": "text", "text": _SYSTEM[system], "cache_control": system_mark}], "messages": msgs}


def _line(t: float, session: str, provider: str, system: int, turns: int, ttl: str | None = None,
          system_ttl: str | None = None) -> bytes:
    url = _OPENAI if provider == "openai" else _ANTHROPIC
    return orjson.dumps({"time": t, "url": url, "session": session, "body": _body(provider, system, turns, ttl, system_ttl)}) + b"\n"


def _write(tmp_path: Path, lines: list[bytes], name: str = "log.jsonl") -> Path:
    log = tmp_path / name
    log.write_bytes(b"".join(lines))
    return log


def _without_partitions(doc: dict[str, Any]) -> dict[str, Any]:
    out = orjson.loads(orjson.dumps(doc))
    out["totals"].pop("partitions")
    return out


def test_marker_lifetimes_and_the_longest_one_agree() -> None:
    assert LONGEST_MARKER_TTL == max(_TTLS.values())
    assert cache.get("anthropic", "claude-sonnet-4-5").longest_ttl() == 3600.0
    assert cache.get("openai", "gpt-4.1").longest_ttl() == 600.0
    assert cache.get("deepseek", "deepseek-v4-flash").longest_ttl() is None


@pytest.mark.parametrize("gap, breaks", [(60.0, 1), (7200.0, 0)])
def test_a_head_change_costs_nothing_when_the_old_head_had_expired(tmp_path: Path, gap: float, breaks: int) -> None:
    # the system prompt changed: the request moves to another partition
    lines = [_line(_T0 + i, "s", "openai", 0, i + 1) for i in range(3)]
    lines.append(_line(_T0 + 2 + gap, "s", "openai", 1, 4))
    r = scan([_write(tmp_path, lines)], workers=1)
    assert r["totals"]["partitions"] == 2
    assert r["totals"]["breaks"] == breaks
    assert (r["totals"]["lost_tokens"] > 0) == bool(breaks)


@pytest.mark.parametrize("gap, breaks", [(60.0, 1), (7200.0, 0)])
def test_an_edit_costs_nothing_after_a_gap_that_emptied_the_cache(tmp_path: Path, gap: float, breaks: int) -> None:
    # an earlier answer was rewritten: the same partition, a break inside it
    lines = [_line(_T0 + i, "s", "openai", 0, i + 1) for i in range(4)]
    edited = orjson.loads(lines[-1])
    edited["time"] = _T0 + 3 + gap
    edited["body"]["messages"][2]["content"] = "answer 0 rewritten"
    lines.append(orjson.dumps(edited) + b"\n")
    r = scan([_write(tmp_path, lines)], workers=1)
    assert r["totals"]["partitions"] == 1
    assert r["totals"]["breaks"] == breaks


@pytest.mark.parametrize("ttl", ["1h", None])
def test_hour_long_breakpoints_keep_a_partition_whole_across_twenty_minute_gaps(tmp_path: Path,
                                                                                 ttl: str | None) -> None:
    # twenty minutes apart: 5-minute entries are gone, 1-hour entries are read
    lines = [_line(_T0 + 20 * 60 * i, "s", "anthropic", 0, i + 1, ttl) for i in range(4)]
    log = _write(tmp_path, lines)
    whole, split = scan([log], workers=1), scan([log], workers=1, split_bytes=1)
    assert split["totals"]["partitions"] == 1  # no gap reaches an hour
    assert _without_partitions(whole) == _without_partitions(split)
    assert (whole["totals"]["read_tokens"] > 0) == (ttl == "1h")


@pytest.mark.parametrize("ttl, system_ttl, gap, breaks", [
    ("1h", None, 1200.0, 1), (None, None, 1200.0, 0), ("1h", None, 4000.0, 0), (None, None, 60.0, 1),
    # the system's hour-long entry is alive, the last message's five-minute one is not:
    # the edit after the system prompt cost nothing that was still there
    (None, "1h", 1200.0, 0), (None, "1h", 60.0, 1)])
def test_an_edit_costs_what_the_breakpoints_still_held(tmp_path: Path, ttl: str | None, system_ttl: str | None,
                                                        gap: float, breaks: int) -> None:
    lines = [_line(_T0 + i, "s", "anthropic", 0, i + 1, ttl, system_ttl) for i in range(4)]
    edited = orjson.loads(lines[-1])
    edited["time"] = _T0 + 3 + gap
    edited["body"]["messages"][1]["content"] = "answer 0 rewritten " + "text " * 200  # the prompt grows
    lines.append(orjson.dumps(edited) + b"\n")
    r = scan([_write(tmp_path, lines)], workers=1)
    assert r["totals"]["breaks"] == breaks


def test_a_split_at_every_gap_of_a_long_log_changes_nothing_but_the_count(tmp_path: Path) -> None:
    lines = []
    for day in range(3):  # three bursts, a day apart, of three sessions each; one changes its head
        for s in range(3):
            for i in range(3):
                t = _T0 + 86400 * day + 30 * s + i
                lines.append(_line(t, f"s{s}", "openai" if s != 1 else "anthropic", int(s == 2 and i == 2), day + i + 1))
    log = _write(tmp_path, lines)
    whole, split = scan([log], workers=1), scan([log], workers=1, split_bytes=1)
    assert split["totals"]["partitions"] > whole["totals"]["partitions"]
    assert _without_partitions(whole) == _without_partitions(split)
    assert whole["totals"]["breaks"] > 0


def test_a_partition_without_a_lifetime_stays_whole_and_says_so(tmp_path: Path) -> None:
    """DeepSeek's cache has no lifetime: a day's gap splits nothing, and a
    partition over the split size is noted as replayed whole; the rest of
    the JSON is that of the scan that did not need to split."""
    url = "https://api.deepseek.com/chat/completions"
    lines = [orjson.dumps({"time": _T0 + 86400 * day + i, "url": url, "session": f"s{day}",
                           "body": {"model": "deepseek-v4-flash",
                                    "messages": [{"role": "system", "content": _SYSTEM[0]}, *_turns(i + 1)]}}) + b"\n"
             for day in range(2) for i in range(3)]
    log = _write(tmp_path, lines)
    whole, asked = scan([log], workers=1), scan([log], workers=1, split_bytes=1000)
    assert asked["totals"]["partitions"] == whole["totals"]["partitions"] == 1
    assert whole["notes"] == []
    (note,) = asked["notes"]
    assert "(deepseek/deepseek-v4-flash) was replayed whole by one worker" in note and "no lifetime" in note
    assert {**asked, "notes": []} == whole
    # a cache with a lifetime splits at the same gap instead, and notes nothing
    openai = [_line(_T0 + 86400 * day + i, f"s{day}", "openai", 0, i + 1) for day in range(2) for i in range(3)]
    split = scan([_write(tmp_path, openai, "openai.jsonl")], workers=1, split_bytes=1000)
    assert split["totals"]["partitions"] == 2 and split["notes"] == []


_GAPS = st.sampled_from([0.0, 1.0, 30.0, 299.0, 301.0, 601.0, 1800.0, 3601.0, 86400.0])


@st.composite
def _logs(draw: st.DrawFn) -> list[bytes]:
    """Up to three sessions interleaved in time order: each request grows its
    session by a turn, may change its head (system prompt) or rewrite its
    history, after a gap drawn across the lifetimes that matter."""
    n = draw(st.integers(2, 9))
    t = _T0
    turns: dict[str, int] = {}
    lines = []
    for _ in range(n):
        session = draw(st.sampled_from(["a", "b", "c"]))
        provider = "anthropic" if session == "c" else "openai"
        t += draw(_GAPS)
        turns[session] = max(1, turns.get(session, 0) + draw(st.integers(0, 1)))
        system = draw(st.integers(0, 1))
        ttl = draw(st.sampled_from([None, "1h"])) if provider == "anthropic" else None
        line = orjson.loads(_line(t, session, provider, system, turns[session], ttl))
        if draw(st.booleans()) and turns[session] > 1:
            line["body"]["messages"][1]["content"] = "rewritten"  # the first question, rewritten
        lines.append(orjson.dumps(line) + b"\n")
    return lines


@given(_logs())
def test_splitting_at_gaps_is_exact(lines: list[bytes]) -> None:
    import tempfile

    with tempfile.TemporaryDirectory() as d:
        log = _write(Path(d), lines)
        whole, split = scan([log], workers=1), scan([log], workers=1, split_bytes=1)
    assert _without_partitions(whole) == _without_partitions(split)


def test_a_cassette_recorded_again_weeks_later_loses_nothing_to_its_changes(shared_real: Path) -> None:
    # mirascope re-recorded requests 3 and 4 of this cassette 27 days after 1 and 2
    # (recorded times 1766103979 and 1768463043), with another tool schema:
    # nothing of the first recording could have been read by the second
    folder = shared_real / "recorded-usage" / "mirascope" / "python" / "tests" / "e2e" / "input" / "cassettes" \
        / "test_caching_tool"
    if not folder.is_dir():
        pytest.skip("the mirascope cassettes are absent")
    log = folder / "openai_gpt_4o_completions.yaml"
    r = scan([log], workers=1)
    assert r["totals"]["requests"] == 4 and r["totals"]["partitions"] == 2
    assert r["totals"]["breaks"] == 0


@pytest.mark.parametrize("provider", ["openai", "anthropic"])
def test_a_request_without_a_time_never_expires(tmp_path: Path, provider: str) -> None:
    # the simulator keeps an entry logged without a time alive: the break a
    # later (timed) request makes against it is charged, as without times
    lines = []
    for i in range(4):
        line = orjson.loads(_line(_T0 + i, "s", provider, 0, i + 1))
        del line["time"]
        lines.append(orjson.dumps(line) + b"\n")
    edited = orjson.loads(_line(_T0 + 86400, "s", provider, 0, 4))
    edited["body"]["messages"][1 if provider == "anthropic" else 2]["content"] = "answer 0 " + "text " * 200
    lines.append(orjson.dumps(edited) + b"\n")
    r = scan([_write(tmp_path, lines)], workers=1)
    assert r["totals"]["read_tokens"] > 0
    assert r["totals"]["breaks"] == 1
