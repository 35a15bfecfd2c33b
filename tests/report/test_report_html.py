"""The HTML and Markdown report pages (issue #33) and the rows' fix lists
(issue #30): contents and a summary table, a token axis under every bar
chart, whole-red bars explained, inline code set as code, text columns
left-aligned and unwrapped, and every row's breaks with what fixing them
keeps."""

from __future__ import annotations

import re

import orjson
import pytest

from fidelity import cli
from fidelity.report import _fmt

ARGS = ["--providers", "deepseek", "anthropic-messages",
        "--variants", "one-shot-fork", "continuable-fork", "defect-tool-order", "--quiet"]


@pytest.fixture(scope="module")
def report(tmp_path_factory) -> tuple[dict, str, str]:
    out = tmp_path_factory.mktemp("r")
    assert cli.main(["report", *ARGS, "--out", str(out)]) == 0
    return (orjson.loads((out / "fidelity-report.json").read_bytes()),
            (out / "fidelity-report.html").read_text("utf-8"), (out / "fidelity-report.md").read_text("utf-8"))


def test_html_opens_with_contents_and_a_summary_table(report):
    data, html, _ = report
    nav = re.search(r"<nav>(.*?)</nav>", html, re.S)
    assert nav is not None
    for sess in data["sessions"]:
        anchor = re.search(rf'<a href="#([^"]+)">{re.escape(sess["name"])}:', nav.group(1))
        assert anchor and f'id="{anchor.group(1)}"' in html
    assert '<a href="#variants">' in nav.group(1) and 'id="variants"' in html
    summary = re.search(r"<h2>Summary</h2><table>(.*?)</table>", html, re.S)
    assert summary is not None
    for sess in data["sessions"]:
        rows = [r for r in data["rows"] if r["session"] == sess["name"]]
        lost = sum(r["tokens"]["lost"] for r in rows)
        cells = re.search(rf'>{re.escape(sess["name"])}</a></td>(.*?)</tr>', summary.group(1)).group(1)
        assert re.findall(r"<td>([^<]*)</td>", cells)[0] == f"{len(rows):,}"
        assert re.findall(r"<td>([^<]*)</td>", cells)[-1] == f"{lost:,}"


def test_every_bar_chart_has_a_token_axis(report):
    data, html, _ = report
    svgs = re.findall(r"<svg .*?</svg>", html, re.S)
    assert len(svgs) == len(data["sessions"]) * len(data["variants"])
    for sess in data["sessions"]:
        biggest = max(r["tokens"]["child_prompt"] for r in data["rows"] if r["session"] == sess["name"])
        assert f">{biggest:,}</text>" in html  # the axis ends at the longest child prompt
    assert all('<g class="axis">' in svg and ">0</text>" in svg and ">tokens</text>" in svg for svg in svgs)


def test_a_whole_red_bar_left_of_its_marker_is_explained(report):
    data, html, _ = report
    red = [r for r in data["rows"] if r["tokens"]["reused"] == 0 and r["tokens"]["lost"] > 0
           and r["tokens"]["common_prefix"] > 0]
    assert red, "the continuable fork on Anthropic reads nothing of a shared prefix"
    for r in red:
        assert f"shares {r['tokens']['common_prefix']:,}, reads none" in html
    assert "shares the prefix up to the marker but reads none of it" in html


def test_inline_code_is_code_not_backticks(report):
    data, html, _ = report
    effects = "".join(re.findall(r'<div class="effects">.*?</div>', html, re.S))
    assert "`" not in effects
    ticked = [v for v in data["variants"] if "`" in v["summary"] + v["token_effect"] + v["kv_cache_effect"]]
    assert ticked and "<code>" in effects


def test_text_columns_are_left_aligned_and_do_not_wrap(report):
    data, html, _ = report
    assert "td.t,th.t{text-align:left;white-space:nowrap}" in html
    if data["harness"]:
        h = data["harness"][0]
        for value in (h["harness"], h["version"], h["cause"]):
            assert f'<td class="t">{value}</td>' in html
    assert '<th class="t">variant</th><th class="t">provider</th>' in html


def test_every_row_shows_its_fix_list_in_html_and_markdown(report):
    data, html, md = report
    with_breaks = [r for r in data["rows"] if r["breaks"]]
    assert with_breaks
    for r in with_breaks:
        for line in _fmt.fixes(r):
            assert line.replace(">", "&gt;") in html or line in html
        assert "; ".join(f"{n}. {x}" for n, x in enumerate(_fmt.fixes(r), 1)).replace("|", "\\|") in md
    # a tool reorder is one break, not one per moved tool
    order = [r for r in data["rows"] if r["variant"] == "defect-tool-order"]
    assert order and all(sum(b["detail"].startswith(("tools reordered", "tool moved")) for b in r["breaks"]) == 1
                         for r in order)


def test_report_segments_carry_the_diffs_name_found_at_the_byte(report):
    """The report shows the name the diff gave the segment (one namer,
    :func:`fidelity.diff.views.name_segment`): a path in the body that holds
    the first divergent byte's pointer (``messages[0] (system)`` holds
    ``/messages/0/content``)."""
    data, html, md = report
    named = [r for r in data["rows"] if r["divergence"]["segment"] is not None]
    assert named
    for r in named:
        d = r["divergence"]
        name = d["segment"]["name"]
        path = "/" + re.sub(r"\[(\d+)\]", r"/\1", re.sub(r" \([a-z_]+\)$", "", name))
        assert d["pointer"] == path or d["pointer"].startswith(path + "/"), (name, d["pointer"])
        assert _fmt.where(r) == f"byte {d['first_divergent_byte']:,} in {name}"
        assert _fmt.where(r) in md and _fmt.where(r) in html
    assert any(r["divergence"]["segment"]["name"] == "messages[0] (system)" for r in named)


def test_divergence_titles_say_each_region_once(report):
    titles = re.findall(r"<title>first divergence: ([^<]*?), after", report[1])
    assert titles, "the bundled report has divergence markers"
    for title in titles:
        assert not re.search(r"\((\w[\w ]*)\) \(\1\)", title), title
        assert "()" not in title, title
