"""Cache views of the OpenAI-family dialects and the byte helpers they use."""

from __future__ import annotations

import json

from conftest import REPO
from hypothesis import given, settings
from hypothesis import strategies as st

from fidelity import wire
from fidelity.canonical import load_request
from fidelity.jsonbytes import dumps_compact, dumps_pyjson, element_spans, member_spans, pointer, value_spans
from fidelity.model import FrozenDict

EXAMPLE = REPO / "fixtures" / "request.example.json"
json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(st.characters(exclude_categories=("Cs",))),
    lambda c: st.lists(c, max_size=4) | st.dictionaries(st.text(st.characters(exclude_categories=("Cs",)), max_size=5), c, max_size=4),
    max_leaves=20)


@given(json_values)
def test_dumps_compact_is_the_sdk_serialiser(value: object) -> None:
    assert dumps_compact(value) == json.dumps(value, ensure_ascii=False, separators=(",", ":"), allow_nan=False).encode()
    assert dumps_pyjson(value) == json.dumps(value).encode()


def _paths(value: object, prefix: tuple = ()):  # every pointer in a value
    yield prefix, value
    if isinstance(value, dict):
        for k, v in value.items():
            yield from _paths(v, prefix + (k,))
    elif isinstance(value, list):
        for i, v in enumerate(value):
            yield from _paths(v, prefix + (i,))


@settings(max_examples=300)
@given(json_values, st.sampled_from(["compact", "pyjson", "indent"]))
def test_value_spans_slice_exactly_the_value(value: object, style: str) -> None:
    body = {"compact": dumps_compact, "pyjson": dumps_pyjson,
            "indent": lambda v: json.dumps(v, indent=1, ensure_ascii=False).encode()}[style](value)
    wanted = {pointer(*p): v for p, v in _paths(value)}
    spans = value_spans(body, list(wanted))
    for ptr, v in wanted.items():
        if isinstance(v, dict) and len(set(v)) != len(v):
            continue
        start, end = spans[ptr]
        assert json.loads(body[start:end]) == v or v != v


def test_member_and_element_spans() -> None:
    body = b'{"a" : 1, "b":[ {"x":"\\"]"} , 2 ]}'
    assert [(m.key, body[m.start:m.end]) for m in member_spans(body)] == [("a", b'"a" : 1'), ("b", b'"b":[ {"x":"\\"]"} , 2 ]')]
    assert [body[s:e] for s, e in element_spans(body, "/b")] == [b'{"x":"\\"]"}', b"2"]
    assert value_spans(body, ["/c", "/b/5"]) == {}


def test_openai_cache_order_is_params_tools_system_messages() -> None:
    body = wire.get("openai-chat").render(load_request(EXAMPLE))
    kinds = [s.kind for s in wire.get("openai-chat").cache_view(body)]
    assert kinds == ["params", "tools", "tools", "system", "message", "message", "message"]


def test_template_cache_order_is_params_system_tools_messages() -> None:
    for name in ("deepseek", "dashscope", "vllm", "sglang"):
        d = wire.get(name)
        view = d.cache_view(d.render(load_request(EXAMPLE)))
        assert [s.kind for s in view] == ["params", "system", "tools", "tools", "message", "message", "message"]
        assert all(s.text for s in view[1:]), name


def test_params_segment_holds_cache_keys_as_sent() -> None:
    body = b'{"model":"m","messages":[],"temperature":1,"tool_choice":"auto","thinking":{"type":"enabled"}}'
    assert wire.get("deepseek").cache_view(body)[0].data == b'"model":"m","thinking":{"type":"enabled"},"tool_choice":"auto"'
    assert wire.get("openai-chat").cache_view(body)[0].data == b'"model":"m","tool_choice":"auto"'


def _reorder_top(body: bytes) -> bytes:
    obj = json.loads(body)
    return dumps_compact(dict(reversed(list(obj.items()))))


def test_top_level_key_order_does_not_change_the_cache_view() -> None:
    for name in ("openai-chat", "deepseek", "dashscope", "openai-responses"):
        d = wire.get(name)
        a = d.render(load_request(EXAMPLE))
        b = _reorder_top(a)
        assert a != b
        assert wire.joined(d.cache_view(a)) == wire.joined(d.cache_view(b))
        assert [s.data for s in d.cache_view(a)] == [s.data for s in d.cache_view(b)]


def test_key_order_inside_a_tool_schema_changes_the_cache_view() -> None:
    d = wire.get("openai-chat")
    a = d.render(load_request(EXAMPLE))
    obj = json.loads(a)
    props = obj["tools"][0]["function"]["parameters"]["properties"]
    obj["tools"][0]["function"]["parameters"]["properties"] = dict(reversed(list(props.items())))
    b = dumps_compact(obj)
    va, vb = d.cache_view(a), d.cache_view(b)
    assert wire.joined(va) != wire.joined(vb)
    first = next(i for i, (x, y) in enumerate(zip(va, vb)) if x.data != y.data)
    assert (va[first].kind, va[first].pointer) == ("tools", "/tools/0")


def test_detection_prefers_specific_dialects() -> None:
    base = {"model": "gpt-5", "messages": [{"role": "user", "content": "x"}]}
    assert wire.detect(base).name == "openai-chat"
    assert wire.detect(dict(base, thinking={"type": "enabled"})).name == "deepseek"
    assert wire.detect(dict(base, model="qwen3-coder-plus")).name == "dashscope"
    assert wire.detect(dict(base, chat_template_kwargs={})).name == "vllm"
    assert wire.detect({"model": "gpt-5", "input": "x"}).name == "openai-responses"


def test_parse_rejects_bad_bodies_with_a_pointer() -> None:
    import pytest

    from fidelity.errors import InputError

    with pytest.raises(InputError, match="/messages"):
        wire.get("openai-chat").parse(b'{"model":"m","messages":{}}')
    with pytest.raises(InputError, match="not valid JSON"):
        wire.get("deepseek").parse(b'{"model":')
    with pytest.raises(InputError, match="model"):
        wire.get("openai-responses").parse(b'{"input":"x"}')


def test_render_does_not_mutate_or_sort() -> None:
    req = load_request(EXAMPLE)
    before = repr(req)
    body = wire.get("openai-chat").render(req)
    assert repr(req) == before
    assert b'"properties":{"path":{"type":"string"},"limit":{"type":"integer"}}' in body
    assert isinstance(req.tools[0].parameters, FrozenDict)
