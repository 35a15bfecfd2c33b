"""The layouts' serialiser (``fidelity.wire.layout._dump``) writes what
``json.dumps`` writes with the same settings, byte for byte, whether orjson
wrote it (the compact settings of the openai / anthropic SDKs) or ``json``
did (any other settings, and any value orjson would write otherwise)."""

from __future__ import annotations

import enum
import json
import sys
import uuid
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from fidelity.errors import InputError
from fidelity.model import FrozenDict
from fidelity.wire import layout
from fidelity.wire.profiles import profile

#: the settings of every client profile and of the bodies ``Written`` meets
_SETTINGS = [(",", ":", False, False), (",", ":", False, True), (", ", ": ", True, True), (", ", ": ", False, False),
             (",", ": ", True, False)]

_floats = st.floats() | st.sampled_from([1e16, 1e-05, 1e-4, -0.0, 0.0, 1.0, 1e22, 5e-324, 1.7976931348623157e308,
                                         9999999999999998.0, 123456789012345.6])
_ints = st.integers() | st.sampled_from([2**63 - 1, 2**63, 2**64 - 1, 2**64, -(2**63), -(2**63) - 1])
_texts = st.text(max_size=12) | st.text(st.characters(codec="utf-8"), max_size=12)  # lone surrogates in the first
_keys = _texts | st.integers(-3, 3) | st.booleans() | st.none()
_values = st.recursive(
    st.none() | st.booleans() | _ints | _floats | _texts,
    lambda inner: st.lists(inner, max_size=4) | st.lists(inner, max_size=4).map(tuple)
    | st.dictionaries(_keys, inner, max_size=4) | st.dictionaries(_texts, inner, max_size=4).map(FrozenDict),
    max_leaves=24)


def _stdlib(value: Any, item: str, key: str, ensure_ascii: bool, allow_nan: bool) -> bytes | type[InputError]:
    """``json.dumps`` with these settings as UTF-8, or :class:`InputError` where it (or UTF-8) refuses."""
    try:
        return json.dumps(value, separators=(item, key), ensure_ascii=ensure_ascii, allow_nan=allow_nan).encode()
    except (ValueError, TypeError):  # NaN refused, an unknown type; UnicodeEncodeError is a ValueError
        return InputError


def _ours(value: Any, item: str, key: str, ensure_ascii: bool, allow_nan: bool) -> bytes | type[InputError]:
    try:
        return layout._dump(value, item_sep=item, key_sep=key, ensure_ascii=ensure_ascii, indent=None, depth=0,
                            allow_nan=allow_nan)
    except InputError:
        return InputError


@settings(max_examples=500)
@given(value=_values, style=st.sampled_from(_SETTINGS))
def test_dump_is_json_dumps_with_the_same_settings(value: Any, style: tuple[str, str, bool, bool]) -> None:
    assert _ours(value, *style) == _stdlib(value, *style)


@settings(max_examples=300)
@given(value=_values)
def test_the_fast_path_answers_only_with_json_dumps_bytes(value: Any) -> None:
    fast = layout._compact(value)
    if fast is not None:
        assert fast == json.dumps(value, separators=(",", ":"), ensure_ascii=False, allow_nan=False).encode()


_plain_floats = st.just(0.0) | st.floats(1e-4, 1e15) | st.floats(-1e15, -1e-4)
_plain_texts = st.text(st.characters(exclude_categories=("Cs",)), max_size=12)
_plain = st.recursive(
    st.none() | st.booleans() | st.integers(-(2**63), 2**64 - 1) | _plain_floats | _plain_texts,
    lambda inner: st.lists(inner, max_size=4) | st.lists(inner, max_size=4).map(tuple)
    | st.dictionaries(_plain_texts, inner, max_size=4) | st.dictionaries(_plain_texts, inner, max_size=4).map(FrozenDict),
    max_leaves=24)


@settings(max_examples=300)
@given(value=_plain)
def test_plain_json_values_take_the_fast_path(value: Any) -> None:
    assert layout._compact(value) == json.dumps(value, separators=(",", ":"), ensure_ascii=False).encode()


def test_every_code_point_is_escaped_alike() -> None:
    text = "".join(chr(c) for c in range(sys.maxunicode + 1) if not 0xD800 <= c < 0xE000)
    expected = json.dumps([text, {text: text}], separators=(",", ":"), ensure_ascii=False).encode()
    assert layout._compact([text, {text: text}]) == expected


def test_a_plain_body_takes_the_fast_path() -> None:
    body = {"model": "gpt-4o", "messages": [FrozenDict(role="user", content="héllo \"x\"\n\x00\u2028")],
            "tools": ({"type": "function", "function": {"name": "f", "parameters": {"type": "object"}}},),
            "temperature": 0.7, "max_tokens": 2**63 - 1, "stream": True, "user": None}
    fast = layout._compact(body)
    assert fast is not None
    assert fast == json.dumps(body, separators=(",", ":"), ensure_ascii=False).encode()


class _Level(enum.IntEnum):
    LOW = 1


@pytest.mark.parametrize("value", [
    1e16, 1e-05, -1e-7, 2**64, float("nan"), float("inf"), "\ud800", {1: "a"}, {None: 1}, _Level.LOW,
    uuid.UUID(int=7), [1, [2, 1e300]], {"a": FrozenDict(b=float("-inf"))},
])
def test_values_orjson_writes_otherwise_go_to_json(value: Any) -> None:
    assert layout._compact(value) is None
    for allow_nan in (False, True):
        assert _ours(value, ",", ":", False, allow_nan) == _stdlib(value, ",", ":", False, allow_nan)


def test_deep_and_cyclic_values_go_to_json() -> None:
    deep: Any = 0
    for _ in range(300):  # past orjson's 254 levels, within json's recursion limit
        deep = [deep]
    assert layout._compact(deep) is None
    assert _ours(deep, ",", ":", False, False) == _stdlib(deep, ",", ":", False, False)
    cyclic: list[Any] = []
    cyclic.append(cyclic)
    assert _ours(cyclic, ",", ":", False, False) is InputError


def test_client_profile_writes_json_dumps_bytes() -> None:
    compact = profile("openai-python>=3", "openai-chat")
    assert (compact.item_sep, compact.key_sep, compact.ensure_ascii) == (",", ":", False)
    body = {"messages": [{"role": "user", "content": "é"}], "model": "m", "temperature": 1e-05, "n": 2**70}
    ordered = compact.order(body)
    assert compact.write(body) == json.dumps(ordered, separators=(",", ":"), ensure_ascii=False).encode()


def test_a_frozen_value_found_alike_is_remembered_only_when_nothing_below_it_can_change() -> None:
    schema = FrozenDict(type="object", properties=FrozenDict(x=FrozenDict(minimum=0.5)), required=("x",))
    assert layout._compact({"tools": [schema]}) == json.dumps({"tools": [schema]}, separators=(",", ":")).encode()
    assert layout._AGREED.get(id(schema)) is schema  # not walked again by the next body that holds it
    assert layout._compact({"again": schema}) == b'{"again":' + json.dumps(schema, separators=(",", ":")).encode() + b"}"
    holder = FrozenDict(values=[1.0])  # a list below: it may change, so it is walked each time
    assert layout._compact({"h": holder}) == b'{"h":{"values":[1.0]}}'
    assert id(holder) not in layout._AGREED
    holder["values"].append(1e-05)
    assert layout._compact({"h": holder}) is None  # orjson writes 1e-05 otherwise
    shared = FrozenDict(t=(1e-05,))
    assert layout._compact({"s": shared}) is None and id(shared) not in layout._AGREED
