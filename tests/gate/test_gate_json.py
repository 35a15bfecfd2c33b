"""``fidelity gate --json``: the verdict as :meth:`fidelity.gate.GateResult.to_json`
(``fidelity.gate/1``), written by the one document writer; the same findings,
messages and exit code as the text view."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from fidelity import formats, gate, gate_output
from fidelity.cli import main

_keys = st.sampled_from(["a", "b", "c", "d"])
_rows = st.lists(st.builds(gate.Row, key=_keys, variant=st.text(max_size=8), lost_tokens=st.floats(0, 1e6),
                           usd_per_fork=st.none() | st.floats(0, 10), fixture=st.none() | st.text(max_size=8),
                           line=st.none() | st.integers(1, 99)),
                 max_size=4, unique_by=lambda r: r.key)


@given(_rows, _rows)
def test_json_view_holds_what_the_text_view_says(current: list[gate.Row], baseline: list[gate.Row]) -> None:
    result = gate.evaluate(current, baseline, gate.Thresholds())
    doc = json.loads(formats.json_doc(result.to_json()))
    assert doc["schema"] == gate.GATE_SCHEMA
    assert doc["passed"] == (result.exit_code == 0) and doc["failures"] == len(result.failures)
    assert [(f["kind"], f["failed"], f["message"]) for f in doc["findings"]] == [
        (f.kind, f.failed, f.message) for f in result.findings]
    text = gate_output.format_text(result, verbose=True)
    assert all(f["message"] in text for f in doc["findings"])
    assert [f["row"]["key"] for f in doc["findings"]] == [f.row.key for f in result.findings]


def test_cli_json_and_exit_code(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                capsysbinary: pytest.CaptureFixture[bytes]) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "pyproject.toml").write_text("[tool.fidelity.gate]\n")
    rows = [gate.Row(key="k", variant="v", lost_tokens=10.0, usd_per_fork=0.5, fixture="f.json", line=3).to_json()]
    report = {"schema": gate.REPORT_SCHEMA,
              "rows": [{"session": "s", "variant": "w", "provider": "openai-chat", "tokens": {"lost": 5}, "cost": None}]}
    (tmp_path / "base.json").write_text(json.dumps({"schema": gate.BASELINE_SCHEMA, "source": "t", "rows": rows}))
    (tmp_path / "report.json").write_text(json.dumps(report))
    code = main(["gate", "--report", "report.json", "--baseline", "base.json", "--json"])
    doc = json.loads(capsysbinary.readouterr().out)
    assert code == 1 and doc["passed"] is False and doc["baseline"] == "base.json"
    assert [(f["kind"], f["row"]["key"]) for f in doc["findings"]] == [("new", "s::w::openai-chat"), ("removed", "k")]
    assert doc["findings"][1]["baseline"] == rows[0] and doc["findings"][0]["baseline"] is None
    assert main(["gate", "--report", "report.json", "--baseline", "base.json", "--json", "--format", "text"]) == 2
