"""Scan's causes follow the fix list (issue #30): every break of a broken
request is counted in the cause and where tables, as `fidelity diff` lists
them (the same :func:`fidelity.diff.breaks_of`); the loss stays on the first."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import orjson
import pytest
from diff.test_diff_breaks import QWEN, _bodies, _qwen_parent_next

from fidelity.capture import snapshot
from fidelity.diff import breaks_of
from fidelity.scan import scan
from fidelity.scan.partition import change_label
from fidelity.scan.views import github, html_page, markdown

REPO = Path(__file__).resolve().parents[2]
REAL = REPO.parent / "shared" / "real"


def _three_break_folder(tmp: Path) -> tuple[Path, bytes, bytes, str]:
    """The Qwen Code fork child after the parent's next turn: three breaks
    (tools removed, the ``agent`` call's arguments rewritten, its tool
    result changed)."""
    parent, child, dialect = _bodies(QWEN)
    nxt = _qwen_parent_next(parent, child)
    folder = tmp / "qwen-three"
    folder.mkdir()
    for name, body in (("parent.snapshot", nxt), ("child.snapshot", child)):
        snap = snapshot.read(QWEN / name)
        (folder / name).write_bytes(snapshot.dumps(replace(snap, body=body)))
    return folder, nxt, child, dialect


def test_scan_counts_every_break_of_the_child_as_diff_lists_them(tmp_path: Path) -> None:
    folder, nxt, child, dialect = _three_break_folder(tmp_path)
    listed = breaks_of(nxt, child, dialect=dialect)
    assert len(listed) == 3  # the pair of the test: three independent breaks
    r = scan([folder], workers=1)
    assert r["totals"]["breaks"] == 1  # one broken request
    rows = {(c["cause"], c["change"]): c for c in r["by_cause"]}
    want: dict[tuple[str, str], list[int]] = {}
    for n, b in enumerate(listed):
        want.setdefault((b.kind, change_label(b.detail)), [0, 0])[0 if n == 0 else 1] += 1
    assert {k: [v["first"], v["behind"]] for k, v in rows.items()} == want
    # the loss is charged to the first break only: no double count
    first = rows[(listed[0].kind, change_label(listed[0].detail))]
    assert first["lost_tokens"] == r["totals"]["lost_tokens"] > 0
    assert sum(c["lost_tokens"] for c in r["by_cause"]) == r["totals"]["lost_tokens"]
    assert sum(c["first"] for c in r["by_cause"]) == r["totals"]["breaks"]
    assert sum(c["behind"] for c in r["by_cause"]) == len(listed) - 1
    assert all(c["breaks"] == c["first"] for c in r["by_cause"])
    # where: the first break at the parent's removed tools, the two others in the messages
    wheres = {(w["kind"], w["pointer"], w["label"]): (w["first"], w["behind"]) for w in r["by_where"]}
    assert wheres[("tools", "/tools/*", "agent")] == (1, 0)
    assert wheres[("message", "/messages/*/tool_calls/*/function/arguments", "")] == (0, 1)
    assert sum(b for _, b in wheres.values()) == 2


def test_the_views_show_the_first_and_behind_columns(tmp_path: Path) -> None:
    folder, *_ = _three_break_folder(tmp_path)
    r = scan([folder], workers=1)
    md = markdown(r)
    assert "| cause | change | first | behind | lost tokens | lost $ |" in md
    assert "| segment | pointer | tool / section | first | behind | lost tokens | lost $ |" in md
    assert "| messages_rewritten | tool-call arguments rewritten | 0 | 1 | 0 |" in md
    assert "<th>first</th><th>behind</th>" in html_page(r)
    assert "| first | behind |" in github(r)


def test_scan_json_with_fix_lists_is_deterministic(tmp_path: Path) -> None:
    folder, *_ = _three_break_folder(tmp_path)
    once = orjson.dumps(scan([folder], workers=1))
    again = orjson.dumps(scan([folder], workers=2))
    assert once == again


@pytest.mark.parametrize("where", [REPO / "fixtures" / "harness", REAL])
def test_counting_the_fix_list_leaves_the_totals_as_they_were(where: Path) -> None:
    """Totals as before this change (measured on the commit before it):
    the breaks behind the first add rows, never tokens."""
    if not where.exists():
        pytest.skip(f"{where} not present")
    expected = json.loads((REPO / "tests" / "data" / "scan_totals_before_fix_list.json").read_text())[where.name]
    r = scan([where], workers=1)
    got = {k: r["totals"][k] for k in expected}
    assert got == expected  # the requests and first breaks counted before the fix list (token figures move with counting)
    assert sum(c["lost_tokens"] for c in r["by_cause"]) == r["totals"]["lost_tokens"]
    assert sum(c["first"] for c in r["by_cause"]) == r["totals"]["breaks"]


def _log_line(second: int, body: dict) -> bytes:
    return orjson.dumps({"time": f"2026-11-30T12:00:{second:02d}Z", "url": "https://api.openai.com/v1/chat/completions",
                         "session": "s1", "body": body}) + b"\n"


def test_a_head_change_lists_the_breaks_behind_it_too(tmp_path: Path) -> None:
    """A child whose first segment changed sits in another cache partition
    than its predecessor (the partition key reads the head); its breaks are
    listed from the two lines all the same."""
    history = [{"role": "user" if i % 2 == 0 else "assistant", "content": f"turn {i} " + "word " * 300}
               for i in range(6)]
    parent = {"model": "gpt-4.1", "messages": [{"role": "system", "content": "Now: 12:00. " + "Rules. " * 600},
                                               *history]}
    child = json.loads(json.dumps(parent))
    child["messages"][0]["content"] = "Now: 12:05. " + "Rules. " * 600
    child["messages"][3]["content"] = "turn 2, edited " + "word " * 300
    child["messages"].append({"role": "user", "content": "go on"})
    log = tmp_path / "log.jsonl"
    log.write_bytes(_log_line(0, parent) + _log_line(30, child))
    listed = breaks_of(orjson.dumps(parent), orjson.dumps(child), dialect="openai-chat")
    assert [b.kind for b in listed] == ["system_changed", "messages_rewritten"]
    r = scan([log], workers=1)
    assert r["totals"]["breaks"] == 1 and r["totals"]["lost_tokens"] > 0
    rows = {c["cause"]: (c["first"], c["behind"], c["lost_tokens"]) for c in r["by_cause"]}
    assert rows == {"system_changed": (1, 0, r["totals"]["lost_tokens"]), "messages_rewritten": (0, 1, 0)}
    wheres = {(w["kind"], w["pointer"]): (w["first"], w["behind"]) for w in r["by_where"]}
    assert wheres == {("system", "/messages/*/content"): (1, 0), ("message", "/messages/*/content"): (0, 1)}
