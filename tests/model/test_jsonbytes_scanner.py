"""The byte scanner's container skip against the decoder it replaced.

``jsonbytes._skip_container`` used to find a container's end with
``json.JSONDecoder(strict=False).raw_decode`` over the body decoded as
latin-1 (one character per byte, so its offsets are byte offsets). That
decoder is the oracle here: on any bytes, at any opening bracket, the regex
scanner returns the same end or refuses as the oracle does (``InputError``).
"""

from __future__ import annotations

import json
import math
from typing import Any

import orjson
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from fidelity import jsonbytes, jsonends
from fidelity.errors import InputError

_ORACLE = json.JSONDecoder(strict=False)


def oracle_end(body: bytes, pos: int) -> int | str:
    try:
        return _ORACLE.raw_decode(body.decode("latin-1"), pos)[1]
    except (ValueError, RecursionError):
        return "refused"


def scanner_end(body: bytes, pos: int) -> int | str:
    try:
        return jsonbytes._skip_container(body, pos)
    except InputError:
        return "refused"


def assert_same_at_every_bracket(body: bytes, limit: int = 40) -> None:
    starts = [i for i, c in enumerate(body) if c in b"[{"][:limit]
    for pos in starts:
        assert scanner_end(body, pos) == oracle_end(body, pos), (body, pos)


# text with the characters that make strings hard: quotes, backslashes,
# control characters, non-ASCII, astral planes, lone surrogates
odd_text = st.text(alphabet=st.sampled_from(['"', "\\", "/", "\n", "\x00", "\x1f", "\x7f", "u", "a", "é", "中",
                                              "\U0001f600", "\ud800", "\udc00", " ", "{", "}", "[", "]", ",", ":"])
                   | st.characters(), max_size=12)
numbers = (st.integers(-(10**30), 10**30) | st.floats(allow_nan=True, allow_infinity=True)
           | st.sampled_from([0, -0.0, 1e-7, 1.5e300, 10**20]))
scalars = st.none() | st.booleans() | numbers | odd_text
json_values = st.recursive(
    scalars,
    lambda inner: st.lists(inner, max_size=5) | st.dictionaries(odd_text, inner, max_size=5),
    max_leaves=30,
)
layouts = st.sampled_from([
    {"separators": (",", ":")}, {"separators": (", ", ": ")}, {"indent": 2}, {"indent": "\t"},
    {"separators": (" , ", " : ")},
])


def _dump(value: Any, layout: dict[str, Any], ascii_only: bool) -> bytes:
    return json.dumps(value, ensure_ascii=ascii_only, **layout).encode("utf-8", "surrogatepass")


@given(value=json_values, layout=layouts, ascii_only=st.booleans())
def test_valid_json_ends_where_the_decoder_ends(value: Any, layout: dict[str, Any], ascii_only: bool) -> None:
    body = _dump([value, {"k": value}], layout, ascii_only)
    assert scanner_end(body, 0) == len(body)
    assert_same_at_every_bracket(body)


@given(value=json_values, layout=layouts, ascii_only=st.booleans(), at=st.floats(0, 1),
       edit=st.sampled_from(["insert", "delete", "replace", "cut"]),
       byte=st.sampled_from([b'"', b"\\", b"u", b"0", b"-", b".", b"e", b",", b":", b"[", b"]", b"{", b"}",
                             b" ", b"\n", b"\x00", b"x", b"N", b"I", b"\xff", b"\\u12", b"\\x", b"01"]))
@settings(max_examples=400)
def test_edited_json_is_refused_or_accepted_as_the_decoder_does(value: Any, layout: dict[str, Any],
                                                                  ascii_only: bool, at: float, edit: str,
                                                                  byte: bytes) -> None:
    body = _dump({"a": [value, {"b": value}], "c": value}, layout, ascii_only)
    i = int(len(body) * at)
    if edit == "insert":
        body = body[:i] + byte + body[i:]
    elif edit == "delete":
        body = body[:i] + body[i + 1 :]
    elif edit == "replace":
        body = body[:i] + byte + body[i + len(byte) :]
    else:
        body = body[:i]
    assert_same_at_every_bracket(body)


@given(raw=st.binary(max_size=60).map(lambda b: b"[" + b) | st.binary(max_size=60).map(lambda b: b'{"' + b))
@settings(max_examples=400)
def test_arbitrary_bytes_after_a_bracket_match_the_decoder(raw: bytes) -> None:
    assert_same_at_every_bracket(raw)


@pytest.mark.parametrize("body", [
    b'[NaN,Infinity,-Infinity]', b'{"a":-Infinity}', b'[1.]', b'[01]', b'[1e]', b'[1e+]', b'[-]', b'[.5]',
    b'["\\u12"]', b'["\\ud800\\udc00"]', b'["\\ud800"]', b'["\\x"]', b'["\x01\x1f"]', b'[1,]', b'{"a":1,}',
    b'{"a" 1}', b'{1:2}', b'[] ', b'[ ]', b'{ }', b'[[[]]]', b'[[],[{}]]', b'[}', b'{]', b'[true,false,null]',
    b'[tru]', b'["a"]]', b'{"a":[1,2}', b'["\xff\xfe"]', b'[1 2]', b'{"a":{"b":{}} }',
])
def test_edge_cases_match_the_decoder(body: bytes) -> None:
    assert scanner_end(body, 0) == oracle_end(body, 0)


def _outcome(fn: Any) -> Any:
    try:
        return fn()
    except (ValueError, InputError) as exc:  # UnicodeDecodeError and JSONDecodeError are ValueErrors
        return type(exc).__name__


@given(inner=st.lists(st.sampled_from([b"a", b"\xc3\xa9", b"\xff", b"\xed\xa0\x80", b"\x00", b"\x1f", b"\\\"",
                                       b"\\n", b"\\u00e9", b"\\ud800", b"\\x", b"\\u12", b"\\\\", b"/", b" "]),
                       max_size=8).map(b"".join))
def test_member_keys_decode_as_before(inner: bytes) -> None:
    # before: every key went through json.loads(key.decode("utf-8")); now only keys with escapes or
    # control characters do, the others are their UTF-8 bytes: the same key or the same error class
    raw = b'"' + inner + b'"'
    body = b"{" + raw + b":1}"
    if jsonbytes._STRING.fullmatch(raw) is None:
        return  # not one string token: the key scan stops before it, with or without the fast path
    before = _outcome(lambda: json.loads(raw.decode("utf-8")))
    now = _outcome(lambda: next(jsonbytes._iter_members(body, 0)).key)
    assert now == before


def test_deep_nesting_is_scanned_without_recursion() -> None:
    body = b"[" * 5000 + b"]" * 5000
    assert jsonbytes._skip_container(body, 0) == len(body)
    assert jsonbytes._skip_container(body, 4000) == len(body) - 4000


def test_nan_is_a_float_the_oracle_reads() -> None:
    # the oracle (the json module) accepts the literal NaN inside a container; so does the scanner
    assert math.isnan(_ORACLE.raw_decode("[NaN]")[0][0])
    assert jsonbytes._skip_container(b"[NaN]", 0) == 5


def test_remembered_ends_are_bounded_and_match_a_fresh_walk(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(jsonends, "_ENDS_BYTES", 200)
    jsonends._ENDS.clear()
    jsonends._ENDS_SIZE[0] = 0
    bodies = [json.dumps({"k": list(range(i)), "s": [{"a": [i]}]}).encode() for i in range(40)]
    for body in bodies:
        ends = jsonends.container_ends(body)
        assert ends is not None and ends == jsonends.walk(body, 0)[1]
        assert jsonends.container_ends(body) is ends  # the second ask is the memo's
    assert sum(map(len, jsonends._ENDS)) == jsonends._ENDS_SIZE[0]
    assert jsonends._ENDS_SIZE[0] <= 200 or len(jsonends._ENDS) == 1
    assert len(jsonends._ENDS) <= 32
    assert jsonends.container_ends(b'{"a": [1, }') is None  # not valid: each skip walks on its own
    with pytest.raises(InputError):
        jsonbytes._skip_container(b'{"a": [1, }', 0)
    assert scanner_end(b'{"a": [1, }', 6) == oracle_end(b'{"a": [1, }', 6) == "refused"
    assert scanner_end(b'[[1], }', 1) == oracle_end(b'[[1], }', 1) == 4  # a valid container in an invalid body


@given(body=st.binary(max_size=12) | st.sampled_from([b" \t\n\r x", b"\x0b x", b"\x1f", b"  ", b"x  "]),
       pos=st.integers(0, 14))
def test_skip_ws_skips_exactly_json_whitespace(body: bytes, pos: int) -> None:
    expected = min(pos, len(body))  # as the regex does: a position past the end is the end
    while expected < len(body) and body[expected] in b" \t\n\r":
        expected += 1
    assert jsonbytes.skip_ws(body, pos) == expected


@given(value=json_values, layout=layouts, ascii_only=st.booleans())
def test_strict_bodies_take_the_fast_path_to_the_same_ends(value: Any, layout: dict[str, Any],
                                                          ascii_only: bool) -> None:
    body = _dump({"v": [value, {"w": value}]}, layout, ascii_only)
    fast = jsonends._strict_ends(body, 0)
    try:
        orjson.loads(body)
        strict = True
    except orjson.JSONDecodeError:  # NaN, a lone surrogate: json's extensions, walked instead
        strict = False
    assert (fast is not None) == strict
    if fast is not None:
        assert fast == jsonends.walk(body, 0)[1]


@pytest.mark.parametrize("body", [b'{"a":"\\\\"}', b'{"a":"\\\\\\"]"}', b'["\\"{", {"b":["\\\\\\\\"]}]',
                                  b'{"a":"x"} trailing', b'[1,2]  ', b'  {"a":[{}]}'])
def test_escaped_quotes_and_backslashes_end_where_the_walk_ends(body: bytes) -> None:
    start = jsonbytes.skip_ws(body, 0)
    fast = jsonends._strict_ends(body, start)
    assert fast is None or fast == jsonends.walk(body, start)[1]
    assert jsonends.container_ends(body) == jsonends.walk(body, start)[1]
