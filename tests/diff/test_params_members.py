"""One params reader (:func:`fidelity.diff.causes.params_members`): the cause's
detail ("temperature changed: 0 → 1") and the cache-key check of the lost-token
count read the params segment the same way, with the project's strict JSON
reader, whatever separators the dialect joined the members with."""

from __future__ import annotations

import json
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from fidelity.diff import _prompts
from fidelity.diff.causes import classify, params_members
from fidelity.strategies import json_objects
from fidelity.wire import Segment


def _members(obj: dict[str, Any], separators: tuple[str, str]) -> bytes:
    """``obj``'s members as a params segment writes them (no braces)."""
    return json.dumps(obj, separators=separators, ensure_ascii=False).encode()[1:-1]


@settings(max_examples=200, deadline=None)
@given(obj=json_objects(), separators=st.sampled_from([(",", ":"), (", ", ": ")]))
def test_members_read_back_as_the_object_in_order(obj: dict[str, Any], separators: tuple[str, str]) -> None:
    got = params_members(_members(obj, separators))
    assert got == obj and list(got) == list(obj)
    segs = [Segment("params", 0, "", _members(obj, separators))]
    assert _prompts._params(segs) == got  # the lost-token count's cache key reads the same members


def test_members_that_do_not_parse_read_as_none() -> None:
    assert params_members(b"") == {}
    assert params_members(b'"model":"a","model":"b"') == {}  # a duplicate key, refused like any reader's
    assert params_members(b'"model":') == {}
    assert _prompts._params([Segment("tools", 0, "/tools/0", b"{}")]) == {}


def test_the_detail_names_the_changed_member_of_spaced_params() -> None:
    parent = [Segment("params", 0, "", b'"model": "gemini-2.5-pro", "temperature": 0')]
    child = [Segment("params", 0, "", b'"model": "gemini-2.5-pro", "temperature": 1')]
    cause = classify(parent, child, 0)
    assert cause.kind == "params_changed" and cause.detail == "temperature changed: 0 → 1"
