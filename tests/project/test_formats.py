"""The one place numbers and escapes are written (fidelity.formats)."""

from __future__ import annotations

import json
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


def test_float_counts_round_half_to_even() -> None:
    assert formats.count(1234.6) == "1,235" and formats.count(2.5) == "2" and formats.count(3.5) == "4"
    assert formats.count(None, "no figure") == "no figure"


@given(st.integers(-(2**53), 2**53))
def test_a_whole_float_counts_as_its_int(n: int) -> None:
    assert formats.count(float(n)) == formats.count(n)


_json = st.recursive(
    st.none() | st.booleans() | st.integers(-(2**63), 2**63 - 1) | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(st.characters(blacklist_categories=())),  # surrogates included
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=4), inner, max_size=4),
    max_leaves=12)


@given(_json)
def test_json_doc_reads_back_as_the_same_values(doc: object) -> None:
    data = formats.json_doc(doc)
    assert data.endswith(b"\n") and json.loads(data) == doc
    assert formats.json_doc(doc) == data  # deterministic


def test_json_doc_is_indented_utf8_and_ascii_only_with_a_lone_surrogate() -> None:
    assert formats.json_doc({"a": ["é", 1]}) == '{\n  "a": [\n    "é",\n    1\n  ]\n}\n'.encode()
    assert formats.json_doc({"a": "\ud800é"}) == b'{\n  "a": "\\ud800\\u00e9"\n}\n'
