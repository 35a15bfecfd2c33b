"""The views of a :class:`fidelity.gate.GateResult`: plain text, GitHub workflow
commands, JUnit XML; pure functions, the CLI prints or writes them."""

from __future__ import annotations

import xml.etree.ElementTree as ET
from collections import Counter

from . import formats
from .gate import GateResult

__all__ = ["summary_line", "format_text", "format_github", "junit_xml"]

#: the kinds of finding, in the order the summary counts them
_KINDS = ("cache_lost", "regression", "new", "removed", "skipped", "improved", "ok")
_MARK = {"cache_lost": "FAIL", "regression": "FAIL", "new": "new ", "removed": "gone", "skipped": "skip",
         "improved": "ok  ", "ok": "ok  "}


def summary_line(result: GateResult) -> str:
    """The verdict in one line: failures, rows, and how many of each kind."""
    n = len(result.failures)
    kinds = Counter(f.kind for f in result.findings)
    counts = ", ".join(f"{kinds[k]} {k}" for k in _KINDS if kinds[k])
    return (f"fidelity gate: {'FAILED' if n else 'passed'} — {n} failure(s), {len(result.findings)} row(s)"
            + (f" ({counts})" if counts else "")
            + (f", baseline {result.baseline_path}" if result.baseline_path else ""))


def format_text(result: GateResult, *, verbose: bool = False) -> str:
    """A line per failure (every row when ``verbose``), then :func:`summary_line`."""
    order = sorted((f for f in result.findings if verbose or f.failed), key=lambda f: (not f.failed, f.row.key))
    lines = []
    for f in order:
        where = f"{f.row.fixture}:{f.row.line}: " if f.failed and f.row.fixture and f.row.line else ""
        mark = "FAIL" if f.failed else _MARK[f.kind]
        lines.append(f"{mark} {where}{f.message}")
    lines.append(summary_line(result))
    return "\n".join(lines) + "\n"


def format_github(result: GateResult, *, verbose: bool = False) -> str:
    """GitHub workflow commands: ``::error`` per failure at its file and line, then the text view."""
    # https://docs.github.com/en/actions/reference/workflows-and-actions/workflow-commands
    out = []
    for f in result.findings:
        if not f.failed:
            continue
        props = []
        if f.row.fixture:
            props.append(f"file={formats.gh_property(f.row.fixture)}")
            if f.row.line:
                props.append(f"line={f.row.line}")
        title = {"cache_lost": "cache-preserving variant lost tokens", "removed": "baseline row not measured",
                 "skipped": "baseline row skipped", "new": "row not in the baseline"}.get(f.kind) or (
            "prompt-cache regression")
        props.append(f"title={formats.gh_property('fidelity: ' + title)}")
        out.append(f"::error {','.join(props)}::{formats.gh_data(f.message)}")
    return "\n".join(out) + ("\n" if out else "") + format_text(result, verbose=verbose)


def junit_xml(result: GateResult) -> bytes:
    """A JUnit XML report: one test case per row, failures with their message."""
    # https://github.com/testmoapp/junitxml
    suites = ET.Element("testsuites", name="fidelity")
    cases = [f for f in result.findings if f.failed or f.kind != "removed"]
    skipped = [f for f in cases if f.kind == "skipped" and not f.failed]
    suite = ET.SubElement(suites, "testsuite", name="fidelity gate", tests=str(len(cases)),
                          failures=str(len(result.failures)), errors="0", skipped=str(len(skipped)))
    for f in cases:
        attrs = {"classname": "fidelity.gate", "name": f.row.key}
        if f.row.fixture:
            attrs["file"] = f.row.fixture
        if f.row.line:
            attrs["line"] = str(f.row.line)
        case = ET.SubElement(suite, "testcase", attrs)
        if f.failed:
            fail = ET.SubElement(case, "failure", message=f.message, type=f.kind)
            fail.text = f.message
        elif f.kind == "skipped":
            ET.SubElement(case, "skipped", message=f.message)
        else:
            out = ET.SubElement(case, "system-out")
            out.text = f.message
    ET.indent(suites)
    return b'<?xml version="1.0" encoding="UTF-8"?>\n' + ET.tostring(suites, encoding="unicode").encode("utf-8") + b"\n"
