"""The harness matrix's Markdown table writes its cells through
:func:`fidelity.formats.md_cell` and its dollars through :func:`fidelity.formats.usd`."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from fidelity import formats
from fidelity.harness import matrix


def _row(cause: str, usd: float) -> dict:
    return {"harness": "h", "release": "1.0", "kind": "task", "provider": "openai", "verdict": "broken",
            "segment": "system", "pointer": "/messages/0", "cause": "system_changed", "cause_detail": cause,
            "kept_tokens": 1200, "lost_tokens": 34000, "usd_per_1000_spawns": usd, "first_broken_in": None}


@given(st.text(), st.floats(0, 1e7))
def test_each_row_stays_one_table_line(detail: str, usd: float) -> None:
    lines = matrix.table([_row(detail, usd)]).removesuffix("\n").split("\n")  # CommonMark ends lines at LF/CR only
    assert "\r" not in lines[2] and len(lines) == 3  # header, rule, the row: a newline in a detail does not start another row
    assert lines[2].endswith(f"| {formats.usd(usd, 2)} |  |")
    assert lines[2].replace("\\|", "").count("|") == len(lines[0].split("|")) - 1 - lines[0].count("\\|")


def test_dollars_have_thousands_separators() -> None:
    assert "| $12,345.68 |" in matrix.table([_row("tool added", 12345.678)])
