"""The report files: one result object, three byte-stable views, an HTML page
that renders offline in a real browser, and the fixtures' provenance."""

from __future__ import annotations

import json
import re
import subprocess
from pathlib import Path

import orjson
import pytest

from fidelity import cli, compose, fixtures, score
from fidelity.formats import json_doc
from fidelity.report import FILES, render_html, render_markdown, to_json

CHROMIUM = Path("/usr/bin/chromium")
ARGS = ["--providers", "deepseek", "anthropic-messages", "vllm",
        "--variants", "one-shot-fork", "continuable-fork", "spawn", "defect-tool-order", "--quiet"]


@pytest.fixture(scope="module")
def reports(tmp_path_factory) -> tuple[Path, Path]:
    """Two independent runs of the command into two folders."""
    a, b = tmp_path_factory.mktemp("a"), tmp_path_factory.mktemp("b")
    assert cli.main(["report", *ARGS, "--out", str(a)]) == 0
    assert cli.main(["report", *ARGS, "--out", str(b)]) == 0
    return a, b


def test_two_runs_are_byte_identical(reports):
    a, b = reports
    for name in FILES:
        assert (a / name).read_bytes() == (b / name).read_bytes(), name


def test_outputs_hold_no_paths_or_timestamps(reports):
    a, _ = reports
    for name in FILES:
        text = (a / name).read_text("utf-8")
        assert str(a) not in text and "/tmp" not in text and "/work" not in text
        assert not re.search(r"\d{4}-\d\d-\d\dT\d\d:\d\d", text)


def test_json_schema_and_provenance(reports):
    data = orjson.loads((reports[0] / "fidelity-report.json").read_bytes())
    assert data["schema"] == "fidelity.report/1"
    assert list(data) == ["schema", "fixtures", "prices", "providers", "sessions", "variants", "rows", "skipped",
                          "harness", "summary"]
    assert data["prices"]["as_of"]
    assert len(data["rows"]) == 3 * 4 * 3
    by = {p["provider"]: p for p in data["providers"]}
    assert by["anthropic-messages"]["estimated"] is True and by["deepseek"]["estimated"] is False
    for row in data["rows"]:
        assert row["tokenizer"] and row["cache_model"]
        assert (row["cost"] is None) == (row["provider"] == "vllm")
        if row["cost"]:
            assert row["cost"]["price_source"].startswith("http") and row["cost"]["price_as_of"]
    assert data["summary"]["cache_preserving_rows_losing_tokens"] == 0


def test_markdown_and_html_show_the_same_figures(reports):
    data = orjson.loads((reports[0] / "fidelity-report.json").read_bytes())
    md = (reports[0] / "fidelity-report.md").read_text("utf-8")
    html = (reports[0] / "fidelity-report.html").read_text("utf-8")
    assert md == render_markdown(data) and html == render_html(data)
    for row in data["rows"]:
        lost = f"lost {row['tokens']['lost']:,}"
        assert lost in html
        assert f"{row['tokens']['reused']:,}" in md
    assert "**Token effect.**" in md and "**KV cache effect.**" in md
    assert "estimate" in md and data["prices"]["table"] in md


def test_html_is_self_contained(reports):
    html = (reports[0] / "fidelity-report.html").read_text("utf-8")
    assert "<script" not in html
    assert not re.search(r"""(src|href)=["']?(https?:|//)""", html)
    assert html.count("<svg") == 3 * 4  # one per session × variant


@pytest.mark.skipif(not CHROMIUM.exists(), reason="chromium is not installed (/usr/bin/chromium)")
def test_html_renders_in_headless_chromium_without_console_errors(reports):
    page = (reports[0] / "fidelity-report.html").resolve()
    proc = subprocess.run(
        [str(CHROMIUM), "--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
         "--enable-logging=stderr", "--v=0", "--dump-dom", page.as_uri()],
        capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert proc.stdout.count("<svg") == 3 * 4
    assert "Prompt-cache fidelity report" in proc.stdout
    console = [line for line in proc.stderr.splitlines() if ":CONSOLE" in line]
    assert console == []


def test_fixtures_dir_option_and_views_of_one_object(tmp_path):
    src = fixtures.bundled_dir()
    (tmp_path / "sessions").mkdir()
    (tmp_path / "sessions" / "first-turn.json").write_bytes(src.joinpath("sessions", "first-turn.json").read_bytes())
    (tmp_path / "sessions.toml").write_text(
        '[[session]]\nname = "mine"\nfile = "sessions/first-turn.json"\ndirective = "count the tests"\n', "utf-8")
    fx = fixtures.load(tmp_path)
    assert [s.name for s in fx.sessions] == ["mine"] and fx.providers  # providers: bundled fallback
    result = score.score(fx, [compose.get_variant("one-shot-fork")], providers=["openai-chat"])
    data = to_json(result)
    assert data["fixtures"] == tmp_path.name
    assert data["rows"][0]["tokens"]["lost"] == 0
    out = tmp_path / "out"
    assert cli.main(["report", "--fixtures", str(tmp_path), "--providers", "openai-chat",
                     "--variants", "one-shot-fork", "--out", str(out), "--quiet"]) == 0
    assert orjson.loads((out / "fidelity-report.json").read_bytes()) == orjson.loads(
        orjson.dumps(data))


def test_bad_arguments_exit_2(tmp_path, capsys):
    assert cli.main(["report", "--fixtures", str(tmp_path / "nope"), "--out", str(tmp_path)]) == 2
    assert cli.main(["report", "--variants", "nope", "--out", str(tmp_path)]) == 2
    assert cli.main(["report", "--providers", "nope", "--out", str(tmp_path)]) == 2
    err = capsys.readouterr().err
    assert err.count("fidelity report: error:") == 3


def test_bundled_session_files_are_current():
    """The committed fixtures are what the generator writes."""
    import importlib.util
    import sys

    here = Path(__file__).resolve().parents[2] / "scripts" / "fixtures" / "generate.py"
    bundled = Path(fixtures.bundled_dir())
    sys.path.insert(0, str(here.parent))
    try:
        spec = importlib.util.spec_from_file_location("_fixture_generate", here)
        mod = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(mod)
        for name, data in mod.build().items():
            assert bundled.joinpath(name).read_bytes() == data, name
    finally:
        sys.path.remove(str(here.parent))


def test_coding_session_meets_the_fixture_brief():
    from fidelity import tokens, wire

    s = next(x for x in fixtures.load().sessions if x.name == "coding-agent")
    h = s.history
    assert sum(1 for m in h.messages if m.role == "user") >= 20
    assert len(h.tools) >= 20
    assert any(len(m.tool_calls()) >= 2 for m in h.messages)  # parallel calls
    assert max(len(str(p.content)) for m in h.messages for p in m.parts if hasattr(p, "call_id")) > 20_000
    assert any("\u4e00" <= ch <= "\u9fff" for m in h.messages for ch in m.text())
    d = wire.get("openai-chat")
    segs = d.cache_view(d.render(h))
    ids = tokens.segment_tokens(tokens.get("o200k_base"), segs)
    head = sum(len(i) for g, i in zip(segs, ids) if g.kind in ("tools", "system"))
    assert head >= 8000


def test_report_has_real_harness_rows(tmp_path):
    """`fidelity report` shows the committed real-harness forks next to the
    reference variants, with the harness version, in all three views."""
    from fidelity.proxy.harness_rows import DEFAULT_FOLDER

    if not DEFAULT_FOLDER.is_dir():
        pytest.skip("no fixtures/harness in this checkout")
    out = tmp_path / "r"
    assert cli.main(["report", "--providers", "deepseek", "--variants", "one-shot-fork", "--out", str(out),
                     "--quiet"]) == 0
    data = orjson.loads((out / "fidelity-report.json").read_bytes())
    harness = {(h["harness"], h["version"]) for h in data["harness"]}
    assert ("qwen-code", "0.24.4") in harness and ("claude-code", "2.1.197") in harness
    qwen = [h for h in data["harness"] if h["harness"] == "qwen-code"]
    assert all(h["cause"].startswith("tools_changed") and h["lost_tokens"] > 0 for h in qwen)
    md = (out / "fidelity-report.md").read_text()
    html = (out / "fidelity-report.html").read_text()
    for h in data["harness"]:
        assert h["provider"] in md and h["provider"] in html
    assert "| qwen-code | 0.24.4 |" in md and "<td class=\"t\">0.24.4</td>" in html
    assert cli.main(["report", "--providers", "deepseek", "--variants", "one-shot-fork", "--out", str(out),
                     "--quiet", "--harness", "none"]) == 0
    assert orjson.loads((out / "fidelity-report.json").read_bytes())["harness"] == []


def test_the_json_view_writes_a_lone_surrogate_escaped() -> None:
    """A body string may hold a lone surrogate (a ``"\\ud800"`` escape): the
    JSON view writes it escaped, as every JSON output does, instead of failing."""
    data = {"rows": [{"pointer": "/messages/0/content", "excerpt": "a\ud800b"}]}
    out = json_doc(data)  # the report's JSON view
    assert json.loads(out) == data and out.endswith(b"\n")  # the standard library reads lone surrogates
    assert json_doc({"n": 1}) == b'{\n  "n": 1\n}\n'
