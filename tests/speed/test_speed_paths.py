"""The speed paths give exactly the results of the plain paths: the scan
memo, the parse reused by the cache view, and tokenizing on threads."""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from fidelity import jsonbytes, jsonio, tokens, wire
from fidelity.diff.locate import pointer_at
from fidelity.errors import InputError
from fidelity.tokens import _parallel

json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.text(max_size=8),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=4), inner, max_size=4),
    max_leaves=20,
)


def _pointers(value: Any, at: str = "") -> list[str]:
    out = [at]
    if isinstance(value, dict):
        for k, v in value.items():
            out += _pointers(v, at + "/" + jsonbytes.escape_token(k))
    elif isinstance(value, list):
        for i, v in enumerate(value):
            out += _pointers(v, f"{at}/{i}")
    return out


def _scan_everything(body: bytes, pointers: list[str]) -> tuple[Any, ...]:
    spans = jsonbytes.value_spans(body, pointers)
    members = [jsonbytes.member_spans(body, p) for p in pointers]
    elements = [jsonbytes.element_spans(body, p) for p in pointers]
    where = [pointer_at(body, i) for i in range(0, len(body) + 1, max(1, len(body) // 40))]
    return spans, members, elements, where


@given(value=json_values, spaced=st.booleans())
def test_scan_memo_changes_no_result(value: Any, spaced: bool) -> None:
    body = json.dumps(value, separators=(", ", ": ") if spaced else (",", ":"), ensure_ascii=False).encode()
    pointers = _pointers(value)
    other = json.dumps([value, value]).encode()  # a second body in the same block
    other_pointers = _pointers([value, value])
    plain = _scan_everything(body, pointers)
    plain_other = _scan_everything(other, other_pointers)
    with jsonbytes.scan_memo():
        first = _scan_everything(body, pointers)
        first_other = _scan_everything(other, other_pointers)
        again = _scan_everything(body, pointers)  # answered from the memo
    assert plain == first == again
    assert plain_other == first_other
    assert body[slice(*plain[0][""])] == body.strip()


def test_scan_memo_still_refuses_malformed_json() -> None:
    with jsonbytes.scan_memo(), pytest.raises(InputError):
        jsonbytes.element_spans(b'{"a":[1,2', "/a")


def test_parsed_once_is_scoped_to_the_object_and_the_block() -> None:
    body = b'{"model":"m","messages":[]}'
    sentinel = {"parsed": "by the caller"}
    with jsonio.parsed_once(body, sentinel):
        assert jsonio.loads(body) is sentinel
        twin = bytes(bytearray(body))  # equal bytes, another object: parsed
        assert twin is not body and jsonio.loads(twin) == {"model": "m", "messages": []}
    assert jsonio.loads(body) == {"model": "m", "messages": []}  # the block is over


@pytest.mark.parametrize("name", ["o200k_base", "deepseek-v4", "qwen3"])
@given(texts=st.lists(st.text(max_size=300), min_size=2, max_size=12))
def test_threads_give_the_same_ids(name: str, texts: list[str]) -> None:
    tok = tokens.get(name)
    serial = [tok.ids(t).tolist() for t in texts]
    old = _parallel.PARALLEL_MIN_CHARS
    _parallel.PARALLEL_MIN_CHARS = 0  # force the threads even for short texts
    try:
        tok.cache_clear()
        threaded = [ids.tolist() for ids in _parallel.encode_texts(tok, texts, threads=3)]
        as_bytes = [ids.tolist() for ids in _parallel.encode_texts(tok, [t.encode("utf-8", "surrogatepass")
                                                                         .decode("utf-8", "replace").encode()
                                                                         for t in texts], threads=2)]
    finally:
        _parallel.PARALLEL_MIN_CHARS = old
    assert threaded == serial
    assert as_bytes == [tok.ids(t.encode("utf-8", "surrogatepass").decode("utf-8", "replace")).tolist() for t in texts]


@given(sizes=st.lists(st.integers(0, 50), max_size=30), n=st.integers(1, 5))
def test_batches_cover_every_text_once_in_order(sizes: list[int], n: int) -> None:
    runs = _parallel._batches(["x" * s for s in sizes], n)
    assert [i for run in runs for i in run] == list(range(len(sizes)))
    assert len(runs) <= n


def test_segment_tokens_on_threads_equal_one_by_one(monkeypatch: pytest.MonkeyPatch) -> None:
    body = wire.get("openai-chat").render(_request())
    segs = wire.get("openai-chat").cache_view(body)
    tok = tokens.get("o200k_base")
    one_by_one = [tok.ids(s.data.decode()).tolist() for s in segs]
    monkeypatch.setattr(_parallel, "PARALLEL_MIN_CHARS", 0)
    monkeypatch.setenv("FIDELITY_THREADS", "2")
    tokens._segment_cache_clear()
    tok.cache_clear()
    assert [ids.tolist() for ids in tokens.segment_tokens(tok, segs)] == one_by_one
    assert [ids.tolist() for ids in tokens.segment_tokens(tok, segs)] == one_by_one  # memo hits


def _request() -> Any:
    from fidelity.model import Message, Request, Route, SystemBlock, Text

    msgs = tuple(Message("user" if i % 2 == 0 else "assistant", (Text(f"step {i}: " + "lorem ipsum " * i),))
                 for i in range(12))
    msgs += (Message("user", (Text("step 0: "),)),)  # a repeated segment: encoded once
    return Request(Route("openai", "gpt-4o"), (SystemBlock("You are terse."),), (), msgs)


@given(value=json_values, spaced=st.booleans(), ascii_only=st.booleans())
def test_text_depth_equals_depth_of_the_value(value: Any, spaced: bool, ascii_only: bool) -> None:
    text = json.dumps(value, separators=(", ", ": ") if spaced else (",", ":"), ensure_ascii=ascii_only)
    assert jsonio.text_depth(text) == jsonio.depth(value)


@pytest.mark.parametrize("text, expected", [('"[[[{"', 0), ('["\\\\", ["\\"]"]]', 2), ("[[[]],{}]", 3), ("1", 0)])
def test_text_depth_skips_strings_and_escapes(text: str, expected: int) -> None:
    assert jsonio.text_depth(text) == expected == jsonio.depth(json.loads(text))


def test_too_deep_is_still_refused() -> None:
    deep = "[" * 300 + "]" * 300
    with pytest.raises(InputError, match="nested more than"):
        jsonio.loads(deep)
    assert jsonio.loads("[" * 256 + "]" * 256) is not None


@given(parts=st.lists(st.one_of(st.text(max_size=6), st.integers(0, 10**6)), max_size=6))
def test_pointer_fast_path_escapes_like_rfc_6901(parts: list[Any]) -> None:
    expected = "".join("/" + str(p).replace("~", "~0").replace("/", "~1") for p in parts)
    assert jsonbytes.pointer(*parts) == expected
    assert jsonbytes.split_pointer(expected) == tuple(str(p) for p in parts)


@pytest.mark.parametrize("dialect", ["openai-chat", "openai-responses"])
def test_billed_ids_on_threads_equal_one_thread(dialect: str, monkeypatch: pytest.MonkeyPatch) -> None:
    from fidelity.tokens.billed import segment_ids

    d = wire.get(dialect)
    segs = d.cache_view(d.render(_request()))
    tok = tokens.get("o200k_base")
    monkeypatch.setenv("FIDELITY_THREADS", "1")
    tok.cache_clear()
    one = [ids.tolist() for ids in segment_ids(tok, segs, dialect=dialect, provider="openai", model="gpt-4o")]
    monkeypatch.setattr(_parallel, "PARALLEL_MIN_CHARS", 0)
    monkeypatch.setenv("FIDELITY_THREADS", "3")
    tok.cache_clear()
    many = [ids.tolist() for ids in segment_ids(tok, segs, dialect=dialect, provider="openai", model="gpt-4o")]
    assert many == one and sum(map(len, one)) > 100


def test_tool_calls_of_another_type_do_not_crash_the_diff() -> None:
    """The fresh-seed fuzz pass found it (seed 14931672627390543601): ``"tool_calls": -1.5``
    crashed the billed framing with ``TypeError``."""
    from fidelity.diff import compare

    parent = (b'{"model":"gpt-4o","messages":[{"role":"system","content":"You are terse."},'
              b'{"role":"user","content":"List files"}]}')
    child = (b'{"model":"gpt-4o","messages":[{"role":"system","content":"You are terse."},'
             b'{"role":"user","content":"List files"},{"role":"assistant","content":null,"tool_calls":-1.5}]}')
    result = compare(parent, child)
    assert result.cause.kind == "appended_only" and result.tokens.child_prompt > result.tokens.parent_prompt
