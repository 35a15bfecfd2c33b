"""Each element segment's pointer names its element, keys with ``~`` and ``/`` escaped."""

from __future__ import annotations

import orjson
from hypothesis import given, settings
from hypothesis import strategies as st

from fidelity.jsonbytes import pointer
from fidelity.wire._openai_common import array_segments


@settings(max_examples=200)
@given(st.text(alphabet="ab~/", min_size=1, max_size=4), st.integers(0, 5), st.integers(0, 3), st.booleans())
def test_element_segments_point_at_their_elements(key: str, n: int, skip: int, compact: bool) -> None:
    body = orjson.dumps({"model": "m", key: [{"k": i} for i in range(n)]},
                        option=0 if compact else orjson.OPT_INDENT_2)
    segs = array_segments(body, key, "message", 0, skip=skip)
    assert [s.pointer for s in segs] == [pointer(key, i) for i in range(skip, n)]
    assert [orjson.loads(s.data) for s in segs] == [{"k": i} for i in range(skip, n)]
