"""The gate reads a baseline and a saved report as strictly as any other
input: a tampered one is refused (one line naming the file and JSON pointer,
exit 2) or fails the gate (exit 1), never passes a real regression. Its
text view shows the failures and one summary line; its hint repeats the
user's own arguments."""

from __future__ import annotations

import ast
import contextlib
import io
import json
import tempfile
from pathlib import Path

import pytest
from hypothesis import given

from fidelity.cli import main
from gate.gate_tampering import (
    KEYS,
    Tampered,
    honest_baseline,
    honest_report,
    regressed_report,
    tampered_baselines,
    tampered_reports,
)

REPO = Path(__file__).resolve().parents[2]


def _gate(folder: Path, *extra: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        rc = main(["gate", "--config", str(folder / "none.toml"), "--format", "text", *extra])
    return rc, out.getvalue(), err.getvalue()


def _run(baseline: bytes, report: bytes, *extra: str) -> tuple[int, str, str, Path]:
    folder = Path(tempfile.mkdtemp(prefix="gate-"))
    (folder / "base.json").write_bytes(baseline)
    (folder / "now.json").write_bytes(report)
    rc, out, err = _gate(folder, "--report", str(folder / "now.json"), "--baseline", str(folder / "base.json"),
                         *extra)
    return rc, out, err, folder


def _dump(doc: object) -> bytes:
    return json.dumps(doc, indent=2).encode()


def _label(row: int) -> str:
    """How the gate names a row of :data:`KEYS` in its messages."""
    session, variant, provider = KEYS[row]
    return f"{variant} ({provider}, {session})"


def _refused_or_failed(rc: int, out: str, err: str, bad_file: Path, label: str) -> None:
    assert rc in (1, 2), (rc, out, err)
    if rc == 2:
        assert len(err.strip().splitlines()) == 1 and "Traceback" not in err, err
        assert str(bad_file) in err and " at /" in err, err  # the file and the JSON pointer
    else:
        assert "FAILED" in out and label in out, out


def test_honest_inputs_pass_and_a_real_regression_fails() -> None:
    """The properties below are not vacuous: the honest pair passes."""
    rc, out, err, _ = _run(_dump(honest_baseline()), _dump(honest_report()))
    assert rc == 0, out + err
    rc, out, _, _ = _run(_dump(honest_baseline()), _dump(regressed_report(1)))
    assert rc == 1 and "lost tokens per fork rose 2,048 → 7,048" in out


@given(tampered_baselines())
def test_a_tampered_baseline_never_passes_a_regression(case: Tampered) -> None:
    rc, out, err, folder = _run(case.data, _dump(regressed_report(case.row)))
    _refused_or_failed(rc, out, err, folder / "base.json", _label(case.row))
    assert (folder / "base.json").read_bytes() == case.data  # inputs never modified


@given(tampered_reports())
def test_a_tampered_report_never_hides_its_regression(case: Tampered) -> None:
    rc, out, err, folder = _run(_dump(honest_baseline()), case.data)
    _refused_or_failed(rc, out, err, folder / "now.json", _label(case.row))


@pytest.mark.parametrize("value", ["NaN", "Infinity", "1e9", "5"])
def test_a_figure_written_as_a_string_is_refused(value: str) -> None:
    base = honest_baseline()
    base["rows"][1]["lost_tokens"] = value
    rc, _, err, folder = _run(_dump(base), _dump(regressed_report(1)))
    assert rc == 2 and err.count("\n") == 1
    assert f"{folder / 'base.json'} at /rows/1/lost_tokens: lost_tokens must be a finite number >= 0" in err


def test_a_duplicate_baseline_row_is_refused_not_last_wins() -> None:
    base = honest_baseline()
    base["rows"].append({**base["rows"][0], "lost_tokens": 1e9})
    rc, _, err, _ = _run(_dump(base), _dump(regressed_report(0)))
    assert rc == 2 and "at /rows/3/key: a second row for 's1::one-shot-fork::openai-chat' (the first is /rows/0)" in err


def test_an_empty_or_short_baseline_fails() -> None:
    base = honest_baseline()
    base["rows"] = []
    rc, _, err, _ = _run(_dump(base), _dump(regressed_report(0)))
    assert rc == 2 and "at /rows: the baseline holds no rows" in err
    base = honest_baseline()
    del base["rows"][2]  # the report's third row is new: named, and it fails
    rc, out, _, _ = _run(_dump(base), _dump(honest_report()))
    assert rc == 1 and "not in the baseline (key s2::one-shot-fork::deepseek)" in out


def test_a_report_whose_cost_is_null_fails_and_whose_cost_is_missing_is_refused() -> None:
    doc = regressed_report(0)
    doc["rows"][0]["tokens"]["lost"] = 1024  # only the cost changed: three times, then no price at all
    doc["rows"][0]["cost"] = None
    rc, out, _, _ = _run(_dump(honest_baseline()), _dump(doc))
    assert rc == 1 and "cost per fork $0.002500 in the baseline, no price now" in out
    del doc["rows"][0]["cost"]
    rc, _, err, _ = _run(_dump(honest_baseline()), _dump(doc))
    assert rc == 2 and "at /rows/0: a row needs a cost" in err


@pytest.mark.parametrize("where,pointer", [("lost", "/rows/2/tokens/lost"), ("usd", "/rows/2/cost/usd_per_child")])
def test_a_negative_report_figure_is_refused(where: str, pointer: str) -> None:
    doc = honest_report()
    if where == "lost":
        doc["rows"][2]["tokens"]["lost"] = -5000
    else:
        doc["rows"][2]["cost"]["usd_per_child"] = -0.5
    rc, _, err, _ = _run(_dump(honest_baseline()), _dump(doc))
    assert rc == 2 and f" at {pointer}: " in err and "finite number >= 0" in err


def test_a_pass_prints_one_summary_line_and_verbose_prints_every_row() -> None:
    rc, out, _, _ = _run(_dump(honest_baseline()), _dump(honest_report()))
    assert rc == 0 and out.count("\n") == 1
    assert out.startswith("fidelity gate: passed — 0 failure(s), 3 row(s) (3 ok), baseline ")
    rc, out, _, _ = _run(_dump(honest_baseline()), _dump(honest_report()), "--verbose")
    assert rc == 0 and out.count("\n") == 4 and out.count("ok   ") == 3
    rc, out, _, _ = _run(_dump(honest_baseline()), _dump(regressed_report(2)))
    lines = out.splitlines()
    assert rc == 1 and len(lines) == 2 and lines[0].startswith("FAIL ") and "(1 regression, 2 ok)" in lines[1]


def test_the_missing_baseline_hint_repeats_the_users_arguments(tmp_path: Path) -> None:
    (tmp_path / "now.json").write_bytes(_dump(honest_report()))
    rc, _, err = _gate(tmp_path, "--report", str(tmp_path / "now.json"), "--baseline", str(tmp_path / "b.json"))
    assert rc == 2 and err.count("\n") == 1
    assert (f"create it with `fidelity gate --report {tmp_path / 'now.json'} --baseline {tmp_path / 'b.json'} "
            f"--config {tmp_path / 'none.toml'} --update-baseline`") in err


def test_the_missing_baseline_hint_keeps_snapshots_and_narrowing() -> None:
    from fidelity.cli import build_parser
    from fidelity.commands.gate import update_command

    args = build_parser("gate").parse_args(["gate", "--snapshots", "my snaps", "--model", "gpt-4o"])
    assert update_command(args) == "fidelity gate --snapshots 'my snaps' --model gpt-4o --update-baseline"
    args = build_parser("gate").parse_args(["gate", "--variants", "a", "b", "--providers", "deepseek"])
    assert update_command(args) == "fidelity gate --providers deepseek --variants a b --update-baseline"


def _imports(module: str) -> set[str]:
    tree = ast.parse((REPO / "fidelity" / f"{module}.py").read_text())
    return {node.module or "" for node in ast.walk(tree) if isinstance(node, ast.ImportFrom)}


def test_data_flows_one_way_rows_then_gate_then_views() -> None:
    """gate_rows reads, gate computes, gate_output renders: no module imports
    one later in that line (the old gate <-> gate_output cycle)."""
    assert not {"gate", "gate_output"} & _imports("gate_rows")
    assert "gate_output" not in _imports("gate")
    assert "gate" in _imports("gate_output")



def test_a_gated_row_says_how_many_breaks_its_fix_list_holds() -> None:
    """Issue 30: the gate's row names the first break and counts the others,
    from the saved report's fix list and from the in-process score alike."""
    import dataclasses

    from fidelity import compose, fixtures, score
    from fidelity.gate_rows import rows_from_report_json, rows_from_score
    from fidelity.report import to_json

    fx = fixtures.load(None)
    fx = dataclasses.replace(fx, sessions=fx.sessions[:1])
    variants = [v for v in compose.load_variants_from_bytes(fx.compositions)
                if v.name in ("continuable-fork", "one-shot-fork")]
    result = score.score(fx, variants, providers=["openai-chat"])
    saved, live = rows_from_report_json(to_json(result)), rows_from_score(result)
    assert [r.detail for r in saved] == [r.detail for r in live]
    for row, gated in zip(result.rows, saved):
        n = len(row.breaks) - 1
        if n > 0:
            assert gated.detail is not None and f"(+{n} more break" in gated.detail
        else:
            assert "more break" not in (gated.detail or "")
    assert any(len(r.breaks) > 1 for r in result.rows), "continuable-fork has more than one break"
