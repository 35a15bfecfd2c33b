"""The views of a gate result: plain text, GitHub workflow commands, JUnit XML.

Pure functions of a :class:`fidelity.gate.GateResult`; the CLI prints or writes them.
"""

from __future__ import annotations

import xml.etree.ElementTree as ET
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from .gate import GateResult

__all__ = ["format_text", "format_github", "junit_xml"]

_MARK = {"cache_lost": "FAIL", "regression": "FAIL", "new": "new ", "removed": "gone", "skipped": "skip",
         "improved": "ok  ", "ok": "ok  "}


def format_text(result: GateResult) -> str:
    """Plain lines, failures first, and a verdict."""
    order = sorted(result.findings, key=lambda f: (not f.failed, f.row.key))
    lines = []
    for f in order:
        where = f"{f.row.fixture}:{f.row.line}: " if f.failed and f.row.fixture and f.row.line else ""
        mark = "FAIL" if f.failed else _MARK[f.kind]
        lines.append(f"{mark} {where}{f.message}")
    n = len(result.failures)
    lines.append(f"fidelity gate: {'FAILED' if n else 'passed'} — {n} failure(s), {len(result.findings)} row(s)"
                 + (f", baseline {result.baseline_path}" if result.baseline_path else ""))
    return "\n".join(lines) + "\n"


def _escape_data(s: str) -> str:
    return s.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def _escape_property(s: str) -> str:
    return _escape_data(s).replace(":", "%3A").replace(",", "%2C")


def format_github(result: GateResult) -> str:
    """GitHub workflow commands: ``::error`` for each failure (pointing at its
    fixture or snapshot file and line), ``::notice`` for new rows, then the
    text summary."""
    out = []
    for f in result.findings:
        if not (f.failed or f.kind == "new"):
            continue
        level = "error" if f.failed else "notice"
        props = []
        if f.row.fixture:
            props.append(f"file={_escape_property(f.row.fixture)}")
            if f.row.line:
                props.append(f"line={f.row.line}")
        title = {"cache_lost": "cache-preserving variant lost tokens", "removed": "baseline row not measured",
                 "skipped": "baseline row skipped"}.get(f.kind) or (
            "prompt-cache regression" if f.failed else "new gated row")
        props.append(f"title={_escape_property('fidelity: ' + title)}")
        out.append(f"::{level} {','.join(props)}::{_escape_data(f.message)}")
    return "\n".join(out) + ("\n" if out else "") + format_text(result)


def junit_xml(result: GateResult) -> bytes:
    """A JUnit XML report: one test case per row, failures with their message."""
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
