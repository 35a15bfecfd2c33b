"""The differ's pointer of a divergent byte: read from a compact body's
layout where it can, the same pointer as the scanner's walk from the root."""

from __future__ import annotations

from typing import Any

import orjson
from hypothesis import given, settings
from hypothesis import strategies as st

from fidelity.diff import _compare
from fidelity.diff.locate import pointer_at

_scalars = st.none() | st.booleans() | st.integers(-1000, 1000) | st.text(alphabet='ab/~"\\\n é', max_size=4)
_values = st.recursive(_scalars, lambda inner: st.lists(inner, max_size=3)
                       | st.dictionaries(st.text(alphabet="ab/~", max_size=3), inner, max_size=3), max_leaves=12)
_bodies = st.dictionaries(st.text(alphabet="ab/~", max_size=3), _values, max_size=4)


@settings(max_examples=200)
@given(_bodies, st.booleans())
def test_the_pointer_is_the_walks_at_every_offset(obj: dict[str, Any], compact: bool) -> None:
    body = orjson.dumps(obj) if compact else orjson.dumps(obj, option=orjson.OPT_INDENT_2)
    for offset in range(len(body) + 1):
        assert _compare._pointer_at(body, offset) == pointer_at(body, offset), offset


def test_a_compact_body_is_scanned_only_inside_the_value_that_holds_the_offset(monkeypatch: Any) -> None:
    body = orjson.dumps({"model": "m", "messages": [{"role": "user", "content": "x" * 50}, {"a/b": [1, {"c": 2}]}]})
    offset = body.index(b'"c"') + 4  # on the 2
    scanned: list[bytes] = []

    def spy(text: bytes, at: int) -> str:
        scanned.append(text)
        return pointer_at(text, at)

    monkeypatch.setattr(_compare, "pointer_at", spy)
    assert _compare._pointer_at(body, offset) == "/messages/1/a~1b/1/c"
    assert scanned == [b'{"a/b":[1,{"c":2}]}']
    assert _compare._pointer_at(body, body.index(b"[")) == "/messages"  # the array's own bracket
    assert _compare._pointer_at(body, 1) == ""  # on a key
    assert scanned == [b'{"a/b":[1,{"c":2}]}']
