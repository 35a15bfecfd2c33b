"""The one place numbers and escapes are written (fidelity.formats)."""

from __future__ import annotations

from urllib.parse import unquote

from hypothesis import given
from hypothesis import strategies as st

from fidelity import formats


def test_numbers() -> None:
    assert formats.count(1234567) == "1,234,567"
    assert formats.count(None) == "–" and formats.count(None, "-") == "-"
    assert formats.usd(1234.5) == "$1,234.5000"
    assert formats.usd(-0.01, 2) == "-$0.01"
    assert formats.usd(None, missing="no price") == "no price"
    assert formats.percent(0.125) == "12.5%"
    assert formats.percent(None, missing="n/a") == "n/a"


@given(st.text())
def test_md_cell_stays_in_one_cell(text: str) -> None:
    cell = formats.md_cell(text)
    assert "\n" not in cell and "\r" not in cell
    assert "|" not in cell.replace("\\|", "")


@given(st.text())
def test_github_values_decode_back_and_hold_no_separator(text: str) -> None:
    data, prop = formats.gh_data(text), formats.gh_property(text)
    assert "\n" not in data and "\r" not in data
    assert ":" not in prop and "," not in prop
    assert unquote(data) == text and unquote(prop) == text
