"""One module renders a DiffResult (``fidelity.diff.views``): the JSON
schema, the console, the plain-text failure and the gate's annotation all
come from it, so that they cannot drift apart."""

from __future__ import annotations

import io
import json
from pathlib import Path

import pytest
from rich.console import Console

from fidelity import gate, pytest_plugin
from fidelity.capture.snapshot import Snapshot, SnapshotWriter
from fidelity.cli import build_parser
from fidelity.commands import diff as diff_cmd
from fidelity.diff import compare, views

SYSTEM = "You are a careful coding agent. " * 300
PARENT = {"model": "gpt-4o", "messages": [{"role": "system", "content": SYSTEM}, {"role": "user", "content": "go"}]}
CHILD = {**PARENT, "tools": [{"type": "function", "function": {"name": "report", "parameters": {}}}]}


def _result():  # type: ignore[no-untyped-def]
    return compare(json.dumps(PARENT).encode(), json.dumps(CHILD).encode())


def test_the_views_agree_with_each_other() -> None:
    r = _result()
    j = views.to_json(r)
    assert r.to_json() == j and j["schema"] == views.SCHEMA == "fidelity.diff/1"
    lines = views.text_lines(r)
    assert lines[0].startswith("prefix not preserved (openai-chat, gpt-4o): tools_changed")
    assert f"lost: {r.cache.lost:,} cached tokens" in lines[-1]
    assert views.annotation(r) == f"{r.cause.kind}: {r.cause.detail} at {r.view.pointer}"
    out = io.StringIO()
    Console(file=out, width=300).print(views.console(r))
    text = out.getvalue()
    for label, value in views.fields(r):
        assert label in text and value.split("  ")[0] in text
    assert views.headline(r) == (False, "✘ prefix broken")


def test_every_caller_renders_through_views(monkeypatch: pytest.MonkeyPatch, tmp_path: Path,
                                           capsys: pytest.CaptureFixture[str]) -> None:
    r = _result()
    monkeypatch.setattr(views, "to_json", lambda result: {"from": "views"})
    monkeypatch.setattr(views, "text_lines", lambda result, verdict=None: ["from views"])
    monkeypatch.setattr(views, "console", lambda result: "from views")
    monkeypatch.setattr(views, "annotation", lambda result: "from views")
    assert r.to_json() == {"from": "views"}
    assert pytest_plugin.explain(r) == "from views"
    (tmp_path / "p.json").write_text(json.dumps(PARENT))
    (tmp_path / "c.json").write_text(json.dumps(CHILD))
    assert diff_cmd.run(build_parser("diff").parse_args(["diff", str(tmp_path / "p.json"), str(tmp_path / "c.json")])) == 0
    assert "from views" in capsys.readouterr().out
    w = SnapshotWriter(tmp_path / "snaps")
    w.write(Snapshot(body=json.dumps(PARENT).encode(), provider="openai-chat", family="openai", model="gpt-4o"))
    w.write(Snapshot(body=json.dumps(CHILD).encode(), provider="openai-chat", family="openai", model="gpt-4o"))
    (row,) = gate.rows_from_snapshots(tmp_path / "snaps")
    assert row.detail is not None and row.detail.startswith("from views")
