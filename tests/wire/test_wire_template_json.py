"""The chat templates' ``tojson`` is ``json.dumps(x, ensure_ascii=False)``
every time, though each text is written once per value (remembered)."""

from __future__ import annotations

import json
import math
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from fidelity.wire import _template

_scalars = (st.none() | st.booleans() | st.integers(-(2**70), 2**70) | st.floats(allow_nan=True)
            | st.text(max_size=6))
_values = st.recursive(_scalars, lambda inner: st.lists(inner, max_size=3)
                       | st.dictionaries(st.text(max_size=4), inner, max_size=3), max_leaves=10)


@settings(max_examples=300)
@given(st.lists(_values, min_size=1, max_size=4))
def test_tojson_is_json_dumps_whatever_was_asked_before(values: list[Any]) -> None:
    for value in values + values:  # the second pass reads what the first remembered
        assert _template._tojson(value) == json.dumps(value, ensure_ascii=False)


def test_equal_values_written_apart_get_their_own_text() -> None:
    # each pair is equal in Python, or written alike by orjson, but json writes them apart
    pairs: list[tuple[Any, Any]] = [
        ({"a": 1}, {"a": 1.0}),
        ([True], [1]),
        ({"a": 1, "b": 2}, {"b": 2, "a": 1}),
        ({"x": None}, {"x": math.nan}),
        ([math.inf], [None]),
        ([1e-05], [0.00001]),
    ]
    for first, second in pairs:
        for value in (first, second, first, second):
            assert _template._tojson(value) == json.dumps(value, ensure_ascii=False)


def test_a_changed_value_is_written_again() -> None:
    tool = {"name": "grep", "parameters": {"type": "object"}}
    assert _template._tojson(tool) == '{"name": "grep", "parameters": {"type": "object"}}'
    tool["parameters"]["type"] = "array"  # the remembered value was this very object
    assert _template._tojson(tool) == '{"name": "grep", "parameters": {"type": "array"}}'


def test_tool_call_arguments_are_read_once_per_string() -> None:
    text = '{"path": "a.py",  "n": 1.50, "deep": [NaN]}'
    want = json.dumps(json.loads(text), ensure_ascii=False)
    assert _template._arguments_json(text) == want == _template._arguments_json(text)
    assert _template._ARGUMENTS[text] == want
    try:
        _template._arguments_json('{"path": ')
    except ValueError:
        pass
    else:
        raise AssertionError("malformed arguments were accepted")
    assert '{"path": ' not in _template._ARGUMENTS


def test_the_memos_are_bounded(monkeypatch: Any) -> None:
    monkeypatch.setattr(_template, "_MEMO_SIZE", 3)
    monkeypatch.setattr(_template, "_TOJSON", {})
    for k in range(10):
        assert _template._tojson({"k": k}) == f'{{"k": {k}}}'
        assert len(_template._TOJSON) <= 3
    assert list(_template._TOJSON) == [b'{"k":7}', b'{"k":8}', b'{"k":9}']
