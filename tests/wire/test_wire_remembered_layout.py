"""A body a client profile writes compactly is laid out as it is written
(:func:`fidelity.wire.spans.laid_out`, kept by :func:`~fidelity.wire.spans.remember`):
the kept layout is the one laying out its bytes gives, and its bytes are
``json.dumps``'s, so the cache views need not parse the body to slice it."""

from __future__ import annotations

import json
from typing import Any

import orjson
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from fidelity import jsonbytes
from fidelity.model import FrozenDict
from fidelity.wire import layout
from fidelity.wire import spans as _spans
from fidelity.wire.profiles import profile

_floats = st.floats() | st.sampled_from([1e16, 1e-05, 1e-4, -0.0, 0.0, 1.0, 0.7, 1e22, 5e-324, 123456789012345.6])
_ints = st.integers() | st.sampled_from([2**63 - 1, 2**63, 2**64 - 1, 2**64, -(2**63), -(2**63) - 1])
_texts = st.text(max_size=8) | st.text(st.characters(codec="utf-8"), max_size=8)  # lone surrogates in the first
_values = st.recursive(
    st.none() | st.booleans() | _ints | _floats | _texts,
    lambda inner: st.lists(inner, max_size=4) | st.lists(inner, max_size=4).map(tuple)
    | st.dictionaries(_texts | st.integers(-2, 2), inner, max_size=3)
    | st.dictionaries(_texts, inner, max_size=3).map(FrozenDict),
    max_leaves=20)
_keys = st.sampled_from(["model", "messages", "tools", "temperature", "é", "a\"b"]) | st.integers(-2, 2) | st.none()
_bodies = st.dictionaries(_keys, _values | st.lists(_values, max_size=4) | st.lists(_values, max_size=4).map(tuple),
                          max_size=5)


def _stdlib(value: Any) -> bytes | None:
    try:
        return json.dumps(value, separators=(",", ":"), ensure_ascii=False, allow_nan=False).encode()
    except (ValueError, TypeError):
        return None


@settings(max_examples=400)
@given(body=_bodies, frozen=st.booleans())
def test_a_remembered_layout_is_the_layout_of_the_bytes(body: dict[Any, Any], frozen: bool) -> None:
    value: Any = FrozenDict(body) if frozen else body
    _spans._LAST.clear()
    _spans._SIZE[0] = 0
    out = layout._compact(value, remember=True)
    assert out == layout._compact(value)  # the same answer as one orjson.dumps of the whole
    if out is None:
        assert not _spans._LAST  # nothing kept for a body orjson writes otherwise
        return
    assert out == _stdlib(value)
    kept = _spans.known_members(out)
    assert kept is not None and kept == _spans._compact_layout(out)
    members = jsonbytes.member_spans(out)
    assert [m for m, _ in kept.values()] == members
    for key, (_, elements) in kept.items():
        if elements is not None:
            assert elements == jsonbytes.element_spans(out, "/" + jsonbytes.escape_token(key))


@pytest.mark.parametrize("body", [
    {"model": "m", "temperature": 1e-05}, {"model": "m", "n": float("nan")}, {1: "a"}, {"a": {1: "b"}},
    {"m": "\ud800"}, {"m": [2**64]}, {"a": FrozenDict(b=float("inf"))},
])
def test_bodies_orjson_writes_otherwise_are_not_remembered(body: dict[Any, Any]) -> None:
    _spans._LAST.clear()
    _spans._SIZE[0] = 0
    assert layout._compact(body, remember=True) is None
    assert not _spans._LAST


def test_a_profile_written_body_is_sliced_without_laying_it_out_again(monkeypatch: Any) -> None:
    body = {"model": "gpt-4o", "messages": [{"role": "user", "content": "a,b]"}, FrozenDict(role="assistant", content="é")],
            "tools": ({"type": "function", "function": {"name": "f"}},), "temperature": 0.7}
    client = profile("openai-python>=3", "openai-chat")
    wire = client.write(body)
    assert wire == json.dumps(client.order(body), separators=(",", ":"), ensure_ascii=False).encode()

    def refuse(*_: Any) -> Any:
        raise AssertionError("the body was laid out again")

    monkeypatch.setattr(_spans, "_compact_layout", refuse)
    assert _spans.top_elements(wire, "messages") == jsonbytes.element_spans(wire, "/messages")
    assert _spans.top_elements(wire, "tools") == jsonbytes.element_spans(wire, "/tools")
    assert _spans.parsed(wire) == jsonbytes.loads(wire) == orjson.loads(wire)


_plain = st.recursive(st.none() | st.booleans() | st.integers(-(2**63), 2**63 - 1) | st.text(max_size=6)
                      | st.floats(allow_nan=False, allow_infinity=False),
                      lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=4), inner, max_size=3),
                      max_leaves=12)
_compact_bodies = st.dictionaries(st.sampled_from(["model", "messages", "tools", "system", "z"]),
                                  _plain | st.lists(_plain, max_size=4), min_size=1, max_size=5)


@settings(max_examples=300)
@given(body=_compact_bodies, other=_compact_bodies, data=st.data())
def test_an_array_rebuilt_from_compact_pieces_keeps_a_layout_of_its_bytes(
        body: dict[str, Any], other: dict[str, Any], data: st.DataObject) -> None:
    raw, donor = orjson.dumps(body), orjson.dumps(other)
    _spans._LAST.clear()
    _spans._SIZE[0] = 0
    key = data.draw(st.sampled_from(sorted(body)))
    assert _spans.known_members(raw) is None and _spans.with_array(raw, key, []) is None  # not remembered: nothing
    layout = _spans.compact_members(raw)
    assert layout is not None and _spans.compact_members(donor) is not None
    pool = [raw[a:b] for a, b in _spans.top_elements(raw, key)] + [donor[a:b] for k in other for a, b in _spans.top_elements(donor, k)]
    pieces = data.draw(st.lists(st.sampled_from(pool), max_size=5)) if pool else []
    out = _spans.with_array(raw, key, pieces)
    if layout[key][1] is None:  # not an array
        assert out is None
        return
    span = _spans.top_value(raw, key)
    assert span is not None
    assert out == raw[: span[0]] + b"[" + b",".join(pieces) + b"]" + raw[span[1] :]
    kept = _spans.known_members(out)
    assert kept is not None and kept == _spans._compact_layout(out)
