"""``generic_request`` resumes from the recent assembly that shares the most
leading ids arrays with it (:mod:`fidelity.cache.assemble`): every request
equals the one assembled from nothing."""

from __future__ import annotations

from array import array
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from fidelity.cache import assemble

_KINDS = ["params", "tools", "system", "message", "message"]


@st.composite
def request_streams(draw: Any) -> list[tuple[list[str], list[array[int]], array[int], list[bool] | None]]:
    """Requests whose segments are drawn from one pool of ids arrays (as the
    billed-ids memo hands out the same array for the same segment), so that
    requests share leading parts by identity, with kinds, DashScope markers
    and reply primings that may differ between requests sharing parts."""
    pool = [array("q", ids) for ids in draw(st.lists(st.lists(st.integers(0, 50), max_size=6), min_size=1, max_size=8))]
    out = []
    picks: list[int] = []
    for _ in range(draw(st.integers(1, 12))):
        how = draw(st.sampled_from(["grow", "grow", "same", "edit", "fresh"]))
        if how == "grow" or not picks:
            picks = picks + draw(st.lists(st.integers(0, len(pool) - 1), min_size=1, max_size=3))
        elif how == "edit":
            at = draw(st.integers(0, len(picks) - 1))
            picks = picks[:at] + [draw(st.integers(0, len(pool) - 1))] + picks[at + 1:]
        elif how == "fresh":
            picks = draw(st.lists(st.integers(0, len(pool) - 1), max_size=6))
        kinds = [draw(st.sampled_from(_KINDS)) for _ in picks]
        if draw(st.booleans()):
            kinds = ["params"] + ["message"] * (len(picks) - 1)
        marked = draw(st.none() | st.lists(st.booleans(), min_size=len(picks), max_size=len(picks)))
        tail = array("q", draw(st.sampled_from([[], [7, 8, 9]])))
        out.append((kinds, [pool[i] for i in picks], tail, marked))
    return out


@settings(max_examples=300)
@given(stream=request_streams())
def test_resumed_requests_equal_requests_assembled_from_nothing(stream: list[Any]) -> None:
    assemble._RECENT.clear()
    for i, (kinds, ids, tail, marked) in enumerate(stream):
        got = assemble.generic_request(kinds, ids, tail, float(i), f"r{i}", (), b"k", marked)
        fresh = assemble.generic_assemble(kinds, ids, tail, float(i), f"r{i}", (), b"k", marked)[0]
        assert got == fresh
        assert list(got.tokens) == [t for part in ids for t in part] + list(tail)


def test_a_repeated_request_resumes_from_the_whole_earlier_one() -> None:
    assemble._RECENT.clear()
    parts = [array("q", [1, 2]), array("q", [3]), array("q", [4, 5, 6])]
    kinds = ["params", "message", "message"]
    first = assemble.generic_request(kinds, parts, array("q", [9]), 1.0, "a")
    assert assemble._recent(parts, 3)[1] == 3
    assert assemble._recent([parts[0], array("q", [3]), parts[2]], 3)[1] == 1  # equal, not the same object
    assert assemble._recent([array("q", [1, 2]), *parts[1:]], 3) == (None, 0)
    again = assemble.generic_request(kinds, parts, array("q", [9]), 2.0, "b")
    assert list(again.tokens) == list(first.tokens) == [1, 2, 3, 4, 5, 6, 9]
    assert again.tokens is not first.tokens  # each request its own prompt array
