"""The cache views' spans of top-level members and array elements
(:mod:`fidelity.wire._spans`) against the byte scanner: a compact body
(orjson's own bytes) takes the serialisation lengths, any other body the
scanner, and both give the scanner's spans."""

from __future__ import annotations

import json
from typing import Any

import orjson
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from fidelity import jsonbytes, jsonio
from fidelity.errors import InputError
from fidelity.wire import spans as _spans

_scalars = st.none() | st.booleans() | st.integers(-(2**63), 2**63 - 1) | st.text(max_size=8) \
    | st.floats(allow_nan=False, allow_infinity=False)
_values = st.recursive(_scalars, lambda inner: st.lists(inner, max_size=4)
                       | st.dictionaries(st.text(max_size=5), inner, max_size=4), max_leaves=20)
_bodies = st.dictionaries(st.sampled_from(["model", "messages", "tools", "input", "a/b", "é"]),
                          _values | st.lists(_values, max_size=5), max_size=5)


def _expected(body: bytes, keys: list[str]) -> tuple[list[Any], dict[str, Any]]:
    members = jsonbytes.member_spans(body)
    return members, {k: jsonbytes.element_spans(body, "/" + jsonbytes.escape_token(k)) for k in keys}


@settings(max_examples=200)
@given(obj=_bodies, compact=st.booleans())
def test_spans_are_the_scanners(obj: dict[str, Any], compact: bool) -> None:
    body = orjson.dumps(obj) if compact else json.dumps(obj, ensure_ascii=False).encode()
    keys = [*obj, "absent"]
    members, elements = _expected(body, keys)
    assert _spans.top_members(body) == members
    for k in keys:
        assert _spans.top_elements(body, k) == elements[k], k
    ptrs = ["", "/absent", "/a~1b", "/a~1b/0", "/é/01"]
    for k in obj:
        ptr = "/" + jsonbytes.escape_token(k)
        ptrs += [ptr, ptr + "/0", ptr + "/2", ptr + "/0/0", ptr + "/-"]
    assert _spans.value_spans(body, ptrs) == jsonbytes.value_spans(body, ptrs)
    for ptr in ptrs:
        assert _spans.element_spans(body, ptr) == jsonbytes.element_spans(body, ptr), ptr
        assert _spans.member_spans(body, ptr) == jsonbytes.member_spans(body, ptr), ptr
    # the compact fast path is taken exactly when orjson writes the body back
    assert (_spans._compact_layout(body) is not None) == (body == orjson.dumps(obj))


def test_a_compact_body_is_sliced_without_the_scanner(monkeypatch: Any) -> None:
    body = orjson.dumps({"model": "m", "messages": [{"role": "user", "content": "a,b]"}, [1, {"x": "}"}]],
                         "tools": []})
    expected = jsonbytes.element_spans(body, "/messages")

    def refuse(*_: Any) -> Any:
        raise AssertionError("the scanner was called")

    for name in ("element_spans", "member_spans", "value_spans", "loads"):
        monkeypatch.setattr(jsonbytes, name, refuse)
    got = _spans.top_elements(body, "messages")
    assert got == expected and [body[s:e] for s, e in got][1] == b'[1,{"x":"}"}]'
    assert _spans.top_elements(body, "tools") == [] and _spans.top_elements(body, "model") == []
    assert _spans.value_spans(body, ["/messages/1", "/model"]) == {"/messages/1": got[1], "/model": (9, 12)}
    assert _spans.parsed(body) == orjson.loads(body)


def test_duplicate_keys_and_spaced_bodies_go_to_the_scanner() -> None:
    for body in (b'{"a":[1],"a":[2,3]}', b'{"a": [1, 2]}', b'{"a":[1.50]}', b'[1]', b'{"a":[1]'):
        assert _spans._compact_layout(body) is None
    assert _spans.top_elements(b'{"a": [1, 2]}', "a") == [(7, 8), (10, 11)]


@settings(max_examples=200)
@given(obj=_bodies, compact=st.booleans())
def test_parsed_is_the_strict_parse(obj: dict[str, Any], compact: bool) -> None:
    body = orjson.dumps(obj) if compact else json.dumps(obj, ensure_ascii=False).encode()
    got = _spans.parsed(body)
    assert got == jsonbytes.loads(body)
    assert _spans.top_value(body, "model") == jsonbytes.value_spans(body, ["/model"]).get("/model")
    assert _spans.parsed(body) is not got  # a new value each call: a caller may keep or change its own


def test_parsed_refuses_what_the_strict_parser_refuses() -> None:
    import pytest

    from fidelity.errors import InputError

    deep = b'{"a":' + b"[" * 300 + b"]" * 300 + b"}"
    for body in (b'{"a":1,"a":2}', b'{"a":NaN}', b'{"a":' + b"9" * 30 + b"}", b'{"a":"\\ud800"}', deep):
        try:
            expected: Any = jsonbytes.loads(body)
        except InputError as exc:
            with pytest.raises(InputError) as got:
                _spans.parsed(body)
            assert str(got.value) == str(exc)
        else:
            assert _spans.parsed(body) == expected


def test_the_layout_memo_is_bounded_by_bytes(monkeypatch: Any) -> None:
    monkeypatch.setattr(_spans, "_LAST_BYTES", 3000)
    bodies = [orjson.dumps({"model": "m", "messages": ["x" * 1000, k]}) for k in range(6)]
    for body in bodies:
        assert _spans.top_elements(body, "messages")[1] == (len(body) - 3, len(body) - 2)
        assert _spans._SIZE[0] == sum(map(len, _spans._LAST)) <= 3000
    assert bodies[-1] in _spans._LAST and bodies[0] not in _spans._LAST


def test_a_compact_body_is_never_too_deep_so_its_depth_is_not_measured(monkeypatch: Any) -> None:
    # orjson refuses a value nested MAX_DEPTH - 1 levels, so a member value or element of a compact
    # body (written on its own, one or two levels below the root) never takes it past MAX_DEPTH
    array: Any = []
    obj: Any = {}
    for _ in range(jsonio.MAX_DEPTH - 2):
        array, obj = [array], {"k": obj}
    for value in (array, obj):
        with pytest.raises(orjson.JSONEncodeError):
            orjson.dumps(value)

    def refuse(text: Any) -> int:
        raise AssertionError("text_depth measured a compact body")

    monkeypatch.setattr(jsonio, "text_depth", refuse)
    deep = b'{"a":' + b"[" * 253 + b"]" * 253 + b',"b":[' + b"{}," * 300 + b"{}]}"  # 254 levels, 600 brackets
    assert _spans.parsed(deep) == orjson.loads(deep)


@pytest.mark.parametrize("levels", [257, 300, 1024])
def test_too_deep_bodies_are_refused_compact_or_not(levels: int) -> None:
    for body in (b"[" * levels + b"]" * levels, b'{"k":' * levels + b"1" + b"}" * levels):
        assert _spans._compact_layout(body) is None  # orjson does not write it back
        with pytest.raises(InputError, match="nested more than 256 levels"):
            _spans.parsed(body, path="deep.json")


def test_each_member_and_element_is_written_once_and_the_depth_bound_holds(monkeypatch: Any) -> None:
    # 256 levels (the strict parser's limit): the root, an array, an element of 254
    deepest = b'{"messages":[' + b"[" * 254 + b"]" * 254 + b',"x"],"model":"m"}'
    assert jsonio.text_depth(deepest) == jsonio.MAX_DEPTH
    layout = _spans._compact_layout(deepest)
    assert layout is not None and layout["messages"][1] == [(13, 13 + 508), (13 + 509, 13 + 512)]
    assert _spans.parsed(deepest) == jsonbytes.loads(deepest)
    # one level more, inside an element: not compact, and refused as the strict parser refuses it
    deeper = b'{"messages":[' + b"[" * 255 + b"]" * 255 + b"]}"
    assert _spans._compact_layout(deeper) is None
    with pytest.raises(InputError, match="nested more than 256 levels"):
        _spans.parsed(deeper, path="deep.json")
    # the whole body is never serialised again: each member value, each element once
    body = orjson.dumps({"model": "m", "messages": [{"role": "user", "content": "hi"}, {"a": [1, 2]}], "n": 1})
    calls: list[Any] = []
    real = orjson.dumps
    monkeypatch.setattr(_spans.orjson, "dumps", lambda v: calls.append(v) or real(v))
    assert _spans._compact_layout(body) is not None
    assert calls == ["model", "m", "messages", {"role": "user", "content": "hi"}, {"a": [1, 2]}, "n", 1]
