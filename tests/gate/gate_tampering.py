"""Hypothesis strategies for tampered gate inputs: baselines and saved reports.

Each strategy draws an honest document (a baseline written the way
``fidelity gate --update-baseline`` writes one, or a saved report in the
``fidelity.report/1`` shape) and changes one thing about it in a way that
once let a real regression pass the gate: a figure written as a string
(``"NaN"``, ``"Infinity"``, ``"1e9"``: ``float()`` reads them all), a
negative figure, a duplicate row, a row dropped, no rows, a cost that is
null or missing. Used by ``tests/gate/test_gate_inputs.py`` and the fresh-seed
pass of ``tests/hostile/test_fuzz_fresh.py``.

Example::

    @given(tampered_baselines())
    def test_x(case: Tampered) -> None:
        base = json.loads(case.data)  # a baseline with one thing changed
"""

from __future__ import annotations

import copy
import json
from dataclasses import dataclass
from typing import Any

from hypothesis import strategies as st

__all__ = ["Tampered", "honest_baseline", "honest_report", "regressed_report", "tampered_baselines",
           "tampered_reports", "KEYS"]

#: the (session, variant, provider) rows of the honest documents
KEYS = (("s1", "one-shot-fork", "openai-chat"), ("s1", "continuable-fork", "anthropic-messages"),
        ("s2", "one-shot-fork", "deepseek"))
_LOST = (1024.0, 2048.0, 512.0)
_USD = (0.0025, 0.004, 0.0011)
#: figures that are not numbers: each once read as one through ``float()``
_NOT_NUMBERS: list[Any] = ["NaN", "Infinity", "-Infinity", "1e9", "0", "", None, True, [], {}]


@dataclass(frozen=True)
class Tampered:
    """A tampered document: its bytes and what was done to it."""

    data: bytes
    how: str
    #: the row changed (the index into :data:`KEYS`)
    row: int


def _report_row(i: int, lost: float, usd: float | None) -> dict[str, Any]:
    session, variant, provider = KEYS[i]
    return {"session": session, "variant": variant, "provider": provider, "cache_preserving": False,
            "tokens": {"lost": lost}, "divergence": {"cause": "tools_changed", "cause_detail": None, "pointer": None},
            "cost": None if usd is None else {"usd_per_child": usd}}


def honest_report(scale_lost: float = 1.0, scale_usd: float = 1.0) -> dict[str, Any]:
    """A saved report (``fidelity.report/1``) with the rows of :data:`KEYS`."""
    return {"schema": "fidelity.report/1",
            "sessions": [{"name": "s1", "file": "sessions/s1.json"}, {"name": "s2", "file": "sessions/s2.json"}],
            "rows": [_report_row(i, _LOST[i] * scale_lost, _USD[i] * scale_usd) for i in range(len(KEYS))],
            "skipped": []}


def regressed_report(row: int) -> dict[str, Any]:
    """The honest report with a real regression on one row: +5,000 lost
    tokens per fork and three times the cost."""
    doc = honest_report()
    r = doc["rows"][row]
    r["tokens"]["lost"] += 5000
    r["cost"]["usd_per_child"] *= 3
    return doc


def honest_baseline() -> dict[str, Any]:
    """The baseline ``fidelity gate --report`` writes for :func:`honest_report`."""
    rows = []
    for i, (session, variant, provider) in enumerate(KEYS):
        rows.append({"key": f"{session}::{variant}::{provider}", "variant": f"{variant} ({provider}, {session})",
                     "lost_tokens": _LOST[i], "usd_per_fork": _USD[i], "fixture": f"sessions/{session}.json",
                     "line": None, "detail": "tools_changed"})
    return {"schema": "fidelity.gate-baseline/1", "source": "report:now.json", "rows": rows}


def _dump(doc: Any) -> bytes:
    return json.dumps(doc, indent=2).encode()


@st.composite
def tampered_baselines(draw: Any) -> Tampered:
    """:func:`honest_baseline` with one change that must not let a regression
    pass: a figure that is not a finite number >= 0, a duplicate row, a row
    dropped, no rows, an unknown member. Gated against
    ``regressed_report(case.row)`` it must fail (exit 1) or be refused (exit 2)."""
    doc = honest_baseline()
    rows = doc["rows"]
    i = draw(st.integers(0, len(rows) - 1))
    how = draw(st.sampled_from(["not_a_number", "negative", "duplicate", "dropped", "no_rows", "unknown_key"]))
    if how == "not_a_number":
        field = draw(st.sampled_from(["lost_tokens", "usd_per_fork"]))
        value = draw(st.sampled_from([v for v in _NOT_NUMBERS if not (field == "usd_per_fork" and v is None)]))
        rows[i][field] = value
        how = f"{field}={value!r}"
    elif how == "negative":
        field = draw(st.sampled_from(["lost_tokens", "usd_per_fork"]))
        rows[i][field] = -draw(st.floats(min_value=1e-6, max_value=1e12))
        how = f"negative {field}"
    elif how == "duplicate":
        twin = copy.deepcopy(rows[i])
        twin["lost_tokens"] = draw(st.sampled_from([0.0, 1e9]))
        rows.insert(draw(st.integers(0, len(rows))), twin)
    elif how == "dropped":
        del rows[i]
    elif how == "no_rows":
        rows.clear()
    else:
        rows[i][draw(st.sampled_from(["lost", "cost", "lost_tokens_per_fork", "x"]))] = 0
    return Tampered(_dump(doc), how, i)


@st.composite
def tampered_reports(draw: Any) -> Tampered:
    """:func:`regressed_report` with one change that must not hide its
    regression: a cost null or missing, a figure negative or not a number,
    a row dropped or doubled. Only the changed row regresses; gated against
    :func:`honest_baseline` the report must fail (exit 1) or be refused (exit 2)."""
    i = draw(st.integers(0, len(KEYS) - 1))
    doc = regressed_report(i)
    rows = doc["rows"]
    how = draw(st.sampled_from(["cost_null", "cost_missing", "usd_missing", "negative", "not_a_number",
                                "dropped", "duplicate"]))
    if how == "cost_null":
        rows[i]["cost"] = None
    elif how == "cost_missing":
        del rows[i]["cost"]
    elif how == "usd_missing":
        rows[i]["cost"] = {}
    elif how == "negative":
        where = draw(st.sampled_from(["lost", "usd"]))
        value = -draw(st.floats(min_value=1e-6, max_value=1e12))
        if where == "lost":
            rows[i]["tokens"]["lost"] = value
        else:
            rows[i]["cost"]["usd_per_child"] = value
        how = f"negative {where}"
    elif how == "not_a_number":
        value = draw(st.sampled_from([v for v in _NOT_NUMBERS if v is not None]))
        rows[i]["tokens"]["lost"] = value
        how = f"tokens.lost={value!r}"
    elif how == "dropped":
        del rows[i]
    else:
        rows.append(copy.deepcopy(rows[i]))
    return Tampered(_dump(doc), how, i)
