"""The example counts the docs state are the ones the code runs."""

from __future__ import annotations

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import hypothesis_counts as hc


def test_no_property_runs_fewer_examples_than_the_profile() -> None:
    default = hc.profile_examples()
    assert default == 200  # what README.md and docs/property-tests.md state
    props = hc.properties()
    assert len(props) > 40  # the reader finds the suite's properties
    short = [p for p in props if p.examples is None or p.examples < default]
    assert not short, f"properties below the ci profile's {default} examples (or unreadable): {short}"


def test_committed_list_is_current() -> None:
    assert hc.DOC.read_text() == hc.markdown(), \
        "docs/property-tests.md is stale: run python3 tests/hypothesis_counts.py --write"


def test_reader_sees_settings_forms(tmp_path: Path) -> None:
    (tmp_path / "conftest.py").write_text('settings.register_profile("ci", max_examples=7)\n')
    (tmp_path / "test_x.py").write_text(
        "FAST = settings(max_examples=3)\n"
        "@given(st.integers())\ndef test_a(x): pass\n"
        "@settings(max_examples=9)\n@given(st.integers())\ndef test_b(x): pass\n"
        "@FAST\n@given(st.integers())\ndef test_c(x): pass\n"
        "def test_d(d):\n    @settings(max_examples=2 if d else 5)\n    @given(st.integers())\n"
        "    def run(x): pass\n    run()\n"
        "N = int(os.environ.get('N') or 11)\n@settings(max_examples=N)\n@given(st.integers())\ndef test_e(x): pass\n")
    got = {p.name: p.examples for p in hc.properties(tmp_path)}
    assert got == {"test_a": 7, "test_b": 9, "test_c": 3, "test_d": 2, "test_e": 11}
