"""The committed matrix (``reports/harness-matrix.{json,md,html}``) is
re-derived here from the committed captures (``fixtures/harness-matrix/``):
no npm, no network. Each row must equal its committed row, so every finding
in the matrix is checked against the bytes it was computed from."""

from __future__ import annotations

from pathlib import Path

import orjson
import pytest

from fidelity.harness import load_all
from fidelity.harness.capture import read_captures, read_pair
from fidelity.harness.drive import DUMMY_KEY, tool_names
from fidelity.harness.judge import VERDICTS
from fidelity.harness.matrix import DEFAULT_FIXTURES, build, table, to_html, to_json, to_markdown

REPO = Path(__file__).resolve().parents[2]
REPORTS = REPO / "reports"
COMMITTED = orjson.loads((REPORTS / "harness-matrix.json").read_bytes())


@pytest.fixture(scope="module")
def matrix() -> dict:
    return build(DEFAULT_FIXTURES, load_all())


def _key(r: dict) -> tuple[str, str, str, str]:
    return r["harness"], r["release"], r["kind"], r["provider_id"]


def test_every_committed_row_is_rederived_from_the_captured_bytes(matrix: dict) -> None:
    committed = {_key(r): r for r in COMMITTED["rows"]}
    derived = {_key(r): r for r in matrix["rows"]}
    assert set(derived) == set(committed)
    for key, row in committed.items():
        assert derived[key] == row, key


def test_the_reports_are_the_views_of_that_matrix_byte_for_byte(matrix: dict) -> None:
    assert to_json(matrix) == (REPORTS / "harness-matrix.json").read_bytes()
    assert to_markdown(matrix) == (REPORTS / "harness-matrix.md").read_text()
    assert to_html(matrix) == (REPORTS / "harness-matrix.html").read_text()
    assert to_json(build(DEFAULT_FIXTURES, load_all())) == to_json(matrix)  # deterministic


def test_the_matrix_covers_what_the_issue_asks(matrix: dict) -> None:
    judged = [r for r in matrix["rows"] if r["verdict"] in VERDICTS]
    harnesses = {r["harness"] for r in judged}
    assert len(harnesses) >= 4, harnesses
    assert len({r["provider_id"] for r in judged}) >= 3
    for h in harnesses:  # three releases or more each, judged or with the reason they were not
        assert len({r["release"] for r in matrix["rows"] if r["harness"] == h}) >= 3, h
    full = [h for h in harnesses if len({r["release"] for r in judged if r["harness"] == h}) >= 3]
    assert len(full) >= 4, full
    # a harness that cannot be run says why
    assert all(r.get("note") for r in matrix["rows"] if r["verdict"] in ("unsupported", "not run"))


def test_the_findings_match_the_bytes() -> None:
    """Spot checks of causes against the raw bodies, independent of the differ."""
    for cap in read_captures(DEFAULT_FIXTURES):
        if cap.status != "captured":
            continue
        parent, child = read_pair(cap)
        rows = [r for r in COMMITTED["rows"] if _key(r)[:3] == (cap.harness, cap.version, cap.kind)]
        assert rows, cap.folder
        removed = [t for t in tool_names(parent) if t not in tool_names(child)]
        for r in rows:
            if r["cause"] == "tools_changed" and (r["cause_detail"] or "").startswith("tool removed: "):
                named = r["cause_detail"].split(";")[0].removeprefix("tool removed: ").split(", ")
                assert sorted(named) == sorted(removed), (cap.folder, r["cause_detail"], removed)
            if r["verdict"] == "kept":
                assert r["lost_tokens"] == 0


def test_no_key_in_any_capture_or_report() -> None:
    files = [p for p in DEFAULT_FIXTURES.rglob("*") if p.is_file()] + sorted(REPORTS.glob("harness-matrix.*"))
    assert files
    for path in files:
        assert DUMMY_KEY.encode() not in path.read_bytes(), path


def test_docs_show_the_committed_matrix() -> None:
    docs = (REPO / "docs" / "harness.md").read_text()
    assert table(COMMITTED["rows"]) in docs


def test_the_command_rebuilds_the_committed_reports_without_running(tmp_path: Path,
                                                                    capsys: pytest.CaptureFixture[str]) -> None:
    from fidelity import cli

    before = {p: p.read_bytes() for p in DEFAULT_FIXTURES.rglob("*") if p.is_file()}
    assert cli.main(["harness", "matrix", "--no-run", "--out", str(tmp_path)]) == 0
    for name in ("harness-matrix.json", "harness-matrix.md", "harness-matrix.html"):
        assert (tmp_path / name).read_bytes() == (REPORTS / name).read_bytes(), name
    assert sorted(p.name for p in tmp_path.iterdir()) == ["harness-matrix.html", "harness-matrix.json",
                                                          "harness-matrix.md"]  # no temporary file left
    assert {p: p.read_bytes() for p in DEFAULT_FIXTURES.rglob("*") if p.is_file()} == before  # inputs untouched
    assert f"harness matrix: {len(COMMITTED['rows'])} rows" in capsys.readouterr().err


def test_a_row_with_nothing_cached_on_either_side_says_so() -> None:
    """A child that loses nothing because the prompts are under the provider's
    minimum is not "kept": nothing was there to keep (the OpenAI Agents SDK's
    small prompts on DashScope and OpenAI)."""
    from fidelity.harness.judge import verdict

    assert verdict(lost=0, read=0) == "too small to cache"
    assert verdict(lost=0, read=1024) == "kept" and verdict(lost=5, read=1024) == "broken"
    small = [r for r in COMMITTED["rows"] if r["verdict"] == "too small to cache"]
    assert small and all(r["kept_tokens"] == 0 and r["lost_tokens"] == 0 for r in small)
    assert not [r for r in COMMITTED["rows"] if r["verdict"] == "kept" and r["kept_tokens"] == 0]
