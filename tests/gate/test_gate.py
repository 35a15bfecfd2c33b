"""The CI gate: exit codes, thresholds from pyproject.toml, GitHub
annotations naming the offending snapshot and tool, JUnit XML."""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from fidelity import gate, gate_output
from fidelity.capture.snapshot import Snapshot, SnapshotWriter
from fidelity.cli import main
from fidelity.errors import InputError

_READ = {"type": "function", "function": {"name": "read_file", "description": "Read a file",
                                           "parameters": {"type": "object", "properties": {"path": {"type": "string"}}}}}
_REPORT = {"type": "function", "function": {"name": "report", "description": "Report to the parent",
                                             "parameters": {"type": "object", "properties": {"text": {"type": "string"}}}}}
_HISTORY = [{"role": "system", "content": "You are a careful coding agent. " * 150},
            {"role": "user", "content": "Explain the layout of this repository. " * 80}]


def _body(tools: list, extra: list) -> bytes:
    return json.dumps({"model": "gpt-4o", "messages": _HISTORY + extra, "tools": tools},
                      separators=(",", ":"), ensure_ascii=False).encode()


def _folder(root: Path, child_tools: list) -> Path:
    folder = root / "snaps"
    w = SnapshotWriter(folder)
    w.write(Snapshot(body=_body([_READ], []), provider="openai-chat", family="openai", model="gpt-4o"))
    w.write(Snapshot(body=_body(child_tools, [{"role": "user", "content": "now the tests"}]),
                     provider="openai-chat", family="openai", model="gpt-4o"))
    return folder


def _pyproject(root: Path, text: str = "") -> None:
    (root / "pyproject.toml").write_text("[tool.fidelity.gate]\n" + text)


@pytest.fixture
def repo(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv("GITHUB_ACTIONS", raising=False)
    _pyproject(tmp_path)
    return tmp_path


def test_added_tool_fails_and_annotation_names_it(repo: Path, capsys: pytest.CaptureFixture[str]) -> None:
    _folder(repo, [_READ])
    assert main(["gate", "--snapshots", "snaps", "--update-baseline"]) == 0
    assert json.loads((repo / "reports/baseline.json").read_text())["schema"] == gate.BASELINE_SCHEMA
    assert main(["gate", "--snapshots", "snaps"]) == 0
    capsys.readouterr()

    import shutil
    shutil.rmtree(repo / "snaps")
    _folder(repo, [_REPORT, _READ])
    code = main(["gate", "--snapshots", "snaps", "--format", "github", "--junit", "out/junit.xml"])
    out = capsys.readouterr().out
    assert code == 1
    error = next(line for line in out.splitlines() if line.startswith("::error "))
    assert error.startswith("::error file=snaps/0002-openai-chat-gpt-4o.snapshot,line=2,title=fidelity%3A ")
    assert "tool added: report" in error and "lost tokens per fork rose 0 → " in error

    suite = ET.parse(repo / "out/junit.xml").getroot().find("testsuite")
    assert suite is not None and suite.get("failures") == "1" and suite.get("tests") == "1"
    case = suite.find("testcase")
    assert case is not None and case.get("file") == "snaps/0002-openai-chat-gpt-4o.snapshot"
    failure = case.find("failure")
    assert failure is not None and "report" in (failure.get("message") or "")


def test_cache_preserving_variant_fails_without_baseline_change(repo: Path, capsys: pytest.CaptureFixture[str]) -> None:
    _folder(repo, [_REPORT, _READ])
    assert main(["gate", "--snapshots", "snaps", "--update-baseline"]) == 0
    assert main(["gate", "--snapshots", "snaps"]) == 0  # same loss as the baseline: no regression
    _pyproject(repo, 'cache_preserving = ["0002-*"]\n')
    assert main(["gate", "--snapshots", "snaps"]) == 1
    assert "declared cache-preserving but loses" in capsys.readouterr().out


def _row(lost: float, usd: float | None = None, key: str = "v") -> gate.Row:
    return gate.Row(key=key, variant=key, lost_tokens=lost, usd_per_fork=usd, fixture="f.json", line=3)


@pytest.mark.parametrize("th,base,cur,failed", [
    (gate.Thresholds(), 100, 100, False),
    (gate.Thresholds(), 100, 101, True),
    (gate.Thresholds(max_lost_tokens_increase=5), 100, 105, False),
    (gate.Thresholds(max_lost_tokens_increase=5), 100, 106, True),
    (gate.Thresholds(max_lost_tokens_increase_pct=10), 1000, 1100, False),
    (gate.Thresholds(max_lost_tokens_increase_pct=10), 1000, 1101, True),
    (gate.Thresholds(max_lost_tokens_increase=50, max_lost_tokens_increase_pct=1), 1000, 1050, False),
    (gate.Thresholds(), 100, 10, False),
])
def test_token_thresholds(th: gate.Thresholds, base: float, cur: float, failed: bool) -> None:
    res = gate.evaluate([_row(cur)], [_row(base)], th)
    assert bool(res.failures) is failed and res.exit_code == int(failed)


def test_cost_threshold() -> None:
    th = gate.Thresholds(max_lost_tokens_increase=10**9, max_cost_increase_pct=5)
    assert gate.evaluate([_row(1, 0.0105)], [_row(1, 0.01)], th).exit_code == 0
    res = gate.evaluate([_row(1, 0.0106)], [_row(1, 0.01)], th)
    assert res.exit_code == 1 and "cost per fork rose $0.010000 → $0.010600" in res.failures[0].message


def test_a_row_new_or_gone_or_skipped_fails_naming_its_key() -> None:
    res = gate.evaluate([_row(5, key="new")], [_row(5, key="old")], gate.Thresholds())
    assert {(f.kind, f.failed) for f in res.findings} == {("new", True), ("removed", True)}
    assert res.exit_code == 1 and all("--update-baseline" in f.message for f in res.failures)
    assert {f.kind: "key " + f.row.key in f.message for f in res.failures} == {"new": True, "removed": True}
    skipped = gate.Row(key="old", variant="v", lost_tokens=0, skipped="builder raised")
    res = gate.evaluate([skipped], [_row(5, key="old")], gate.Thresholds())
    assert res.exit_code == 1 and res.failures[0].kind == "skipped" and "builder raised" in res.failures[0].message
    # skipped in the baseline too: reported, not failed; never measured and not in the baseline: new, failed
    assert gate.evaluate([skipped], [skipped], gate.Thresholds()).exit_code == 0
    assert gate.evaluate([skipped], [], gate.Thresholds()).exit_code == 1
    junit = ET.fromstring(gate_output.junit_xml(gate.evaluate([_row(1, key="a")], [_row(1, key="a"), _row(1, key="b")],
                                                       gate.Thresholds())))
    assert junit.find("testsuite").get("failures") == "1" and len(junit.iter("failure").__next__().text) > 0


def test_report_run_that_drops_a_row_fails_until_the_baseline_is_updated(repo: Path, monkeypatch: pytest.MonkeyPatch,
                                                                          capsys: pytest.CaptureFixture[str]) -> None:
    from types import SimpleNamespace as NS

    from fidelity import score as score_mod
    from fidelity.commands import report as report_cmd

    def fake(rows: tuple, skipped: tuple = ()) -> object:
        return NS(sessions=(NS(name="s", file="f.json"),), rows=rows, skipped=skipped)

    row = NS(session="s", variant="v", dialect="openai-chat", lost=0, cost=None, cause="appended_only",
             cause_detail=None, pointer=None, cache_preserving=False)
    other = NS(**{**vars(row), "variant": "w"})
    monkeypatch.setattr(report_cmd, "build_score", lambda args, progress=None: fake((row, other)))
    assert main(["gate", "--update-baseline"]) == 0
    assert main(["gate"]) == 0
    monkeypatch.setattr(report_cmd, "build_score", lambda args, progress=None: fake(
        (row,), (score_mod.Skipped("s", "w", "openai-chat", "boom"),)))
    capsys.readouterr()
    assert main(["gate"]) == 1
    assert "skipped now (boom)" in capsys.readouterr().out
    monkeypatch.setattr(report_cmd, "build_score", lambda args, progress=None: fake((row,)))
    assert main(["gate"]) == 1
    assert main(["gate", "--variants", "v"]) == 0  # a narrowed run expects only its selection
    assert main(["gate", "--update-baseline"]) == 0 and main(["gate"]) == 0  # dropped on purpose


def test_github_escaping() -> None:
    row = gate.Row(key="k", variant="a%b\nc", lost_tokens=9, fixture="dir,x/f:1.json", line=4, cache_preserving=True)
    text = gate_output.format_github(gate.evaluate([row], None, gate.Thresholds()))
    first = text.splitlines()[0]
    assert first.startswith("::error file=dir%2Cx/f%3A1.json,line=4,")
    assert "a%25b%0Ac is declared" in first


@pytest.mark.parametrize("toml,problem", [
    ("max_lost_tokens_increase = -1\n", "must be a number >= 0"),
    ('max_cost_increase_pct = "5"\n', "must be a number >= 0"),
    ("threshold = 3\n", "unknown key(s) threshold"),
    ("cache_preserving = 3\n", "must be a list of strings"),
    ("max_lost = [\n", "not valid TOML"),
])
def test_bad_config_exits_2(repo: Path, toml: str, problem: str, capsys: pytest.CaptureFixture[str]) -> None:
    _folder(repo, [_READ])
    _pyproject(repo, toml)
    assert main(["gate", "--snapshots", "snaps"]) == 2
    err = capsys.readouterr().err
    assert problem in err and "pyproject.toml" in err and len(err.strip().splitlines()) == 1


def test_missing_baseline_and_bad_input_exit_2(repo: Path, capsys: pytest.CaptureFixture[str]) -> None:
    _folder(repo, [_READ])
    assert main(["gate", "--snapshots", "snaps"]) == 2
    assert "--update-baseline" in capsys.readouterr().err
    assert main(["gate", "--snapshots", "nowhere"]) == 2
    (repo / "report.json").write_text('{"x": 1}')
    assert main(["gate", "--report", "report.json"]) == 2


def _saved_report(lost: int) -> dict:
    """A saved report (``fidelity.report/1``) with one row losing ``lost`` tokens."""
    return {"schema": gate.REPORT_SCHEMA, "sessions": [{"name": "s", "file": "f.jsonl"}],
            "rows": [{"session": "s", "variant": "spawn", "provider": "openai-chat", "tokens": {"lost": lost},
                      "cost": None}]}


@pytest.mark.parametrize("doc", [
    {"fixtures": [{"path": "a.jsonl", "variants": [{"variant": "spawn", "lost_tokens": 2816}]}]},
    {"variants": [{"name": "spawn", "lost_tokens": 100}]},
    {"schema": "fidelity.diff/1", "rows": []},
    [1, 2],
])
def test_only_a_fidelity_report_is_read_as_a_report(doc, repo: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """The gate reads the report `fidelity report` writes and nothing else:
    another shape is one line naming the file, exit 2."""
    with pytest.raises(InputError, match="not a fidelity report"):
        gate.rows_from_report(doc, path="x.json")
    (repo / "other.json").write_text(json.dumps(doc))
    (repo / "now.json").write_text(json.dumps(_saved_report(1)))
    capsys.readouterr()
    assert main(["gate", "--report", "other.json", "--update-baseline"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "other.json" in err and "not a fidelity report" in err
    assert main(["gate", "--report", "now.json", "--baseline", "other.json"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "other.json" in err and "not a gate baseline" in err


def test_report_json_can_be_the_baseline(repo: Path) -> None:
    (repo / "base.json").write_text(json.dumps(_saved_report(100)))
    (repo / "now.json").write_text(json.dumps(_saved_report(101)))
    assert main(["gate", "--report", "now.json", "--baseline", "base.json"]) == 1
    _pyproject(repo, "max_lost_tokens_increase = 1\n")
    assert main(["gate", "--report", "now.json", "--baseline", "base.json"]) == 0


def test_rows_from_score_object() -> None:
    from types import SimpleNamespace as NS

    row = NS(session="s1", variant="fork-report", dialect="openai-chat", lost=2304, cost=NS(per_child=0.0123),
             cause="tools_changed", cause_detail="tool added: report", pointer="/tools/0", cache_preserving=True)
    score = NS(sessions=(NS(name="s1", file="fixtures/s1.jsonl"),), rows=(row,))
    (r,) = gate.rows_from_score(score)
    assert r.key == "s1::fork-report::openai-chat" and r.fixture == "fixtures/s1.jsonl"
    assert r.detail == "tools_changed: tool added: report at /tools/0" and r.usd_per_fork == 0.0123
    res = gate.evaluate([r], None, gate.Thresholds())
    assert res.exit_code == 1 and res.failures[0].kind == "cache_lost"


def test_gate_reads_the_report_that_fidelity_report_writes(repo: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """`fidelity report` writes reports/fidelity-report.json; `gate --report`
    reads it and gets the very rows the in-process run gates."""
    narrow = ["--variants", "one-shot-fork", "continuable-fork", "--providers", "openai-chat", "anthropic-messages"]
    assert main(["report", "--quiet", "--out", "reports", *narrow]) == 0
    saved = json.loads((repo / "reports" / "fidelity-report.json").read_text())
    from fidelity import compose, fixtures, score

    fx = fixtures.load(None)
    variants = [v for v in compose.load_variants_from_bytes(fx.compositions) if v.name in narrow]
    in_process = gate.rows_from_score(score.score(fx, variants, providers=["openai-chat", "anthropic-messages"]))
    assert gate.rows_from_report(saved) == in_process and len(in_process) == 4 * len(fx.sessions)
    capsys.readouterr()
    assert main(["gate", "--report", "reports/fidelity-report.json", "--update-baseline"]) == 0
    assert main(["gate", "--report", "reports/fidelity-report.json"]) == 0
    assert main(["gate", *narrow]) == 0  # the in-process run against the saved report's baseline
    out = capsys.readouterr().out
    assert "0 failure(s)" in out and f"{len(in_process)} row(s)" in out
