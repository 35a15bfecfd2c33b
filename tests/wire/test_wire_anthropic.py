"""The anthropic-messages dialect against the official ``anthropic`` SDK.

Every property drives the real ``Anthropic`` client through an httpx2 mock
transport (the 2.x SDK uses ``httpx2``), captures the body it would send and
compares bytes. No network.
"""

from __future__ import annotations

import dataclasses
import json
import warnings
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

anthropic = pytest.importorskip("anthropic")
httpx2 = pytest.importorskip("httpx2")

from fidelity import wire  # noqa: E402
from fidelity.errors import InputError  # noqa: E402
from fidelity.model import (  # noqa: E402
    Image,
    Message,
    Reasoning,
    Request,
    Route,
    SystemBlock,
    Text,
    Tool,
    ToolCall,
    ToolResult,
    freeze,
    thaw,
)
from fidelity.wire.anthropic_messages import ANTHROPIC_MESSAGES as D  # noqa: E402

# ---------------------------------------------------------------- the SDK

_CAPTURED: list[bytes] = []
_REPLY = {
    "id": "msg_1", "type": "message", "role": "assistant", "model": "m", "content": [],
    "stop_reason": "end_turn", "stop_sequence": None, "usage": {"input_tokens": 1, "output_tokens": 1},
}


def _handler(request: Any) -> Any:
    _CAPTURED.append(request.content)
    return httpx2.Response(200, json=_REPLY)


CLIENT = anthropic.Anthropic(
    api_key="x", max_retries=0, http_client=httpx2.Client(transport=httpx2.MockTransport(_handler))
)
#: ``Messages.create`` keyword arguments other than the three required ones.
SDK_KWARGS = {
    "cache_control", "container", "diagnostics", "inference_geo", "metadata", "output_config",
    "service_tier", "speed", "stop_sequences", "stream", "thinking", "tool_choice", "user_profile_id",
    "workspace_id",
}


def sdk_body(**kwargs: Any) -> bytes:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        CLIENT.messages.create(**kwargs)
    return _CAPTURED.pop()


# ----------------------------------------- test-only adapter: Request -> SDK call
# Written from the Messages API reference shapes, independent of the renderer.


def _block(part: Any) -> dict[str, Any]:
    if isinstance(part, Text):
        d: dict[str, Any] = {"type": "text", "text": part.text}
        if part.cache_control is not None:
            d["cache_control"] = thaw(part.cache_control)
        return d
    if isinstance(part, Image):
        d = {"type": "image", "source": {"type": "url", "url": part.url}}
    elif isinstance(part, ToolCall):
        d = {"type": "tool_use", "id": part.id, "name": part.name, "input": thaw(part.arguments)}
    elif isinstance(part, ToolResult):
        content = part.content if isinstance(part.content, str) else [_block(p) for p in part.content]
        d = {"type": "tool_result", "tool_use_id": part.call_id, "content": content}
        if part.is_error:
            d["is_error"] = True
    if isinstance(part, (Image, ToolCall, ToolResult)):
        if part.cache_control is not None:
            d["cache_control"] = thaw(part.cache_control)
        return d
    assert isinstance(part, Reasoning)
    return {"type": "thinking", "thinking": part.text, "signature": part.signature}


def sdk_call(request: Request) -> bytes:
    messages = []
    for m in request.messages:
        p = m.parts
        plain = len(p) == 1 and isinstance(p[0], Text) and p[0].cache_control is None
        messages.append({"role": m.role, "content": p[0].text if plain else [_block(x) for x in p]})
    params = thaw(request.params)
    kwargs: dict[str, Any] = {"model": request.route.model, "messages": messages,
                              "max_tokens": params.pop("max_tokens")}
    if request.system:
        s = request.system
        if len(s) == 1 and s[0].cache_control is None:
            kwargs["system"] = s[0].text
        else:
            kwargs["system"] = [
                {"type": "text", "text": b.text, **({"cache_control": thaw(b.cache_control)} if b.cache_control else {})}
                for b in s
            ]
    if request.tools:
        kwargs["tools"] = [
            {"name": t.name, **({"description": t.description} if t.description is not None else {}),
             "input_schema": thaw(t.parameters), **thaw(t.extra)}
            for t in request.tools
        ]
    extra = {}
    for k, v in params.items():
        if k in SDK_KWARGS:
            kwargs[k] = v
        else:
            extra[k] = v
    if extra:
        kwargs["extra_body"] = extra
    return sdk_body(**kwargs)


# ---------------------------------------------------------------- strategies

# CJK, emoji (astral plane), combining marks, controls, quotes, U+2028.
ALPHABET = st.one_of(
    st.characters(codec="utf-8", exclude_categories=("Cs",)),
    st.sampled_from(list("日本語中文한국어😀🧪👍🏽\u0301\u0308\u200d\u2028\u2029\"\\/\n\t\x00\x1f\x7f é")),
)
texts = st.text(ALPHABET, max_size=24)
keys = st.text(ALPHABET, min_size=1, max_size=8)
ids = st.text("abcdefghijklmnopqrstuvwxyz0123456789_", min_size=1, max_size=10).map(lambda s: "toolu_" + s)
names = st.from_regex(r"[a-zA-Z][a-zA-Z0-9_]{0,12}", fullmatch=True)
floats = st.floats(allow_nan=False, allow_infinity=False)
scalars = st.one_of(st.none(), st.booleans(), st.integers(-(2**70), 2**70), floats, texts)
json_values = st.recursive(
    scalars,
    lambda inner: st.one_of(st.lists(inner, max_size=3), st.dictionaries(keys, inner, max_size=3)),
    max_leaves=8,
)
json_objects = st.dictionaries(keys, json_values, max_size=4)
cache_controls = st.sampled_from([None, {"type": "ephemeral"}, {"type": "ephemeral", "ttl": "1h"},
                                  {"ttl": "5m", "type": "ephemeral"}])


@st.composite
def schemas(draw: Any, depth: int = 2) -> dict[str, Any]:
    """A nested JSON schema with its keys in a random order."""
    kind = draw(st.sampled_from(["object", "string", "integer", "array"] if depth else ["string", "number"]))
    members: list[tuple[str, Any]] = [("type", kind)]
    if draw(st.booleans()):
        members.append(("description", draw(texts)))
    if kind == "object":
        props = draw(st.dictionaries(keys, schemas(depth - 1), max_size=3))
        members.append(("properties", props))
        if props and draw(st.booleans()):
            members.append(("required", draw(st.lists(st.sampled_from(sorted(props)), unique=True))))
        if draw(st.booleans()):
            members.append(("additionalProperties", False))
    elif kind == "array":
        members.append(("items", draw(schemas(depth - 1))))
    elif kind == "string" and draw(st.booleans()):
        members.append(("enum", draw(st.lists(texts, min_size=1, max_size=3))))
    return dict(draw(st.permutations(members)))


images = st.builds(
    Image, st.sampled_from(["https://example.com/a.png", "https://例え.jp/画像.jpg?q=1&x=é", "https://x.test/😀.gif"]),
    cache_control=cache_controls,
)
user_parts = st.one_of(
    st.builds(Text, texts, cache_control=cache_controls),
    images,
    st.builds(ToolResult, ids,
              content=st.one_of(texts, st.lists(st.one_of(st.builds(Text, texts, cache_control=cache_controls), images),
                                                max_size=2).map(tuple)),
              is_error=st.booleans(), cache_control=cache_controls),
)
assistant_parts = st.one_of(
    st.builds(Text, texts, cache_control=cache_controls),
    st.builds(Reasoning, texts, signature=st.text("ABCDEFabcdef0123456789+/=", min_size=1, max_size=20)),
    st.builds(ToolCall, ids, names, arguments=json_objects, cache_control=cache_controls),
)


@st.composite
def messages(draw: Any) -> tuple[Message, ...]:
    out = []
    for i in range(draw(st.integers(1, 5))):
        role = "user" if i % 2 == 0 else "assistant"
        parts = draw(st.lists(user_parts if role == "user" else assistant_parts, max_size=3))
        out.append(Message(role, tuple(parts)))
    return tuple(out)


tools = st.builds(
    Tool, names, description=st.one_of(st.none(), texts), parameters=schemas(),
    extra=st.sampled_from([{}, {"cache_control": {"type": "ephemeral"}}, {"strict": True}]),
)
system_blocks = st.builds(SystemBlock, texts, cache_control=cache_controls)


@st.composite
def params(draw: Any) -> dict[str, Any]:
    p: dict[str, Any] = {"max_tokens": draw(st.integers(1, 16000))}
    optional = {
        "thinking": st.sampled_from([{"type": "enabled", "budget_tokens": 2048}, {"type": "adaptive"}, {"type": "disabled"}]),
        "tool_choice": st.sampled_from([{"type": "auto"}, {"type": "any"}, {"type": "tool", "name": "t"}, {"type": "none"}]),
        "stop_sequences": st.lists(texts, max_size=2),
        "metadata": st.builds(lambda u: {"user_id": u}, texts),
        "cache_control": st.sampled_from([{"type": "ephemeral"}, {"type": "ephemeral", "ttl": "1h"}]),
        "output_config": st.sampled_from([{"effort": "low"}, {"effort": "high"}]),
        "service_tier": st.sampled_from(["auto", "standard_only"]),
        "stream": st.just(False),
        "temperature": floats,  # not an SDK argument: travels in extra_body
        "top_k": st.integers(0, 500),
    }
    for name in draw(st.permutations(sorted(optional))):
        if draw(st.booleans()):
            p[name] = draw(optional[name])
    return p


requests = st.builds(
    lambda model, system, tools_, msgs, prm: Request(Route("anthropic", model), tuple(system), tuple(tools_), msgs, freeze(prm)),
    st.sampled_from(["claude-sonnet-4-6", "claude-opus-4-7", "claude-haiku-4-5", "模型-é"]),
    st.lists(system_blocks, max_size=3),
    st.lists(tools, max_size=3),
    messages(),
    params(),
)


def _without_result_names(request: Request) -> Request:
    """parse() fills ToolResult.name from the matching tool_use; the
    generated requests leave it None."""
    msgs = tuple(
        dataclasses.replace(m, parts=tuple(dataclasses.replace(p, name=None) if isinstance(p, ToolResult) else p for p in m.parts))
        for m in request.messages
    )
    return dataclasses.replace(request, messages=msgs)


# ---------------------------------------------------------------- properties


@settings(max_examples=300)
@given(requests)
def test_render_is_what_the_sdk_sends_and_parse_inverts_it(request: Request) -> None:
    captured = sdk_call(request)
    assert D.render(request) == captured
    parsed = D.parse(captured)
    assert D.render(parsed) == captured
    assert _without_result_names(parsed) == request  # canonical layout: no verbatim fallback needed


@st.composite
def raw_messages(draw: Any) -> list[dict[str, Any]]:
    """Caller-made message dicts in arbitrary key orders and shapes the
    canonical layout does not use (verbatim fallback)."""
    blocks = st.one_of(
        st.builds(lambda t, cc: {"type": "text", "text": t, **({"cache_control": cc} if cc else {})}, texts, cache_controls),
        st.builds(lambda i, n, a, cc: {"type": "tool_use", "id": i, "name": n, "input": a, **({"cache_control": cc} if cc else {})},
                  ids, names, json_objects, cache_controls),
        st.builds(lambda i, c, cc: {"type": "tool_result", "tool_use_id": i, "content": c, "is_error": False,
                                    **({"cache_control": cc} if cc else {})}, ids, texts, cache_controls),
        st.builds(lambda u, cc: {"type": "image", "source": {"type": "url", "url": u}, **({"cache_control": cc} if cc else {})},
                  st.just("https://example.com/a.png"), cache_controls),
        st.builds(lambda d: {"type": "redacted_thinking", "data": d}, texts),
        st.builds(lambda d: {"type": "document", "source": {"type": "text", "media_type": "text/plain", "data": d}}, texts),
    )
    shuffled = blocks.flatmap(lambda b: st.permutations(list(b.items())).map(dict))
    out = []
    for i in range(draw(st.integers(1, 4))):
        content = draw(st.one_of(texts, st.lists(shuffled, max_size=3)))
        members = [("role", "user" if i % 2 == 0 else "assistant"), ("content", content)]
        out.append(dict(draw(st.permutations(members))))
    return out


@settings(max_examples=300)
@given(raw_messages(), st.one_of(st.none(), texts, st.lists(st.builds(lambda t: {"text": t, "type": "text"}, texts), max_size=2)),
       st.lists(schemas().map(lambda s: {"input_schema": s, "name": "t"}), max_size=2))
def test_parse_keeps_any_sdk_body_byte_exact(msgs: list[dict[str, Any]], system: Any, tools_: list[dict[str, Any]]) -> None:
    kwargs: dict[str, Any] = {"model": "claude-sonnet-4-6", "max_tokens": 10, "messages": msgs, "tools": tools_}
    if system is not None:
        kwargs["system"] = system
    captured = sdk_body(**kwargs)
    parsed = D.parse(captured)
    assert D.render(parsed) == captured
    assert len(parsed.messages) == len(msgs)
    segments = D.cache_view(captured)
    for s in segments[1:]:  # every segment is the exact slice at its pointer
        assert json.loads(s.data) == _at(json.loads(captured), s.pointer)


def _at(obj: Any, ptr: str) -> Any:
    for token in ptr.split("/")[1:]:
        obj = obj[int(token)] if isinstance(obj, list) else obj[token.replace("~1", "/").replace("~0", "~")]
    return obj


# ------------------------------------------------------------------ examples


def _plain_request() -> Request:
    return Request(
        Route("anthropic", "claude-sonnet-4-6"),
        system=(SystemBlock("You are terse.", cache_control=freeze({"type": "ephemeral"})),),
        tools=(Tool("read", "Read a file", freeze({"type": "object", "properties": {"path": {"type": "string"}, "limit": {"type": "integer"}}})),),
        messages=(Message("user", (Text("hi"),)),),
        params=freeze({"max_tokens": 1024, "thinking": {"type": "enabled", "budget_tokens": 2048}}),
    )


def test_top_level_key_order_is_the_sdk_literal_order() -> None:
    body = D.render(_plain_request())
    assert list(json.loads(body)) == ["max_tokens", "messages", "model", "system", "thinking", "tools"]
    assert body.startswith(b'{"max_tokens":1024,"messages":[{"role":"user","content":"hi"}],"model":')


def test_cache_view_order_and_slices() -> None:
    body = D.render(_plain_request())
    view = D.cache_view(body)
    assert [(s.kind, s.index, s.pointer) for s in view] == [
        ("params", 0, ""), ("tools", 0, "/tools/0"), ("system", 0, "/system/0"), ("message", 0, "/messages/0"),
    ]
    assert view[0].data == b'"model":"claude-sonnet-4-6","thinking":{"type":"enabled","budget_tokens":2048}'
    assert view[3].data == b'{"role":"user","content":"hi"}'


def test_top_level_key_order_does_not_change_the_cache_view_but_schema_order_does() -> None:
    body = D.render(_plain_request())
    obj = json.loads(body)
    reordered = {k: obj[k] for k in ["tools", "thinking", "system", "model", "messages", "max_tokens"]}
    body_b = json.dumps(reordered, ensure_ascii=False, separators=(",", ":")).encode()
    assert body_b != body
    assert wire.joined(D.cache_view(body_b)) == wire.joined(D.cache_view(body))
    assert [s.data for s in D.cache_view(body_b)] == [s.data for s in D.cache_view(body)]

    props = obj["tools"][0]["input_schema"]["properties"]
    obj["tools"][0]["input_schema"]["properties"] = {"limit": props["limit"], "path": props["path"]}
    body_c = json.dumps(obj, ensure_ascii=False, separators=(",", ":")).encode()
    a, c = D.cache_view(body), D.cache_view(body_c)
    assert wire.joined(a) != wire.joined(c)
    first = next(i for i, (x, y) in enumerate(zip(a, c)) if x.data != y.data)
    assert (c[first].kind, c[first].pointer) == ("tools", "/tools/0")


def test_string_system_is_one_segment() -> None:
    body = sdk_body(model="m", max_tokens=5, system="sys 日本", messages=[{"role": "user", "content": "x"}])
    view = D.cache_view(body)
    assert [(s.kind, s.pointer, s.data) for s in view[1:2]] == [("system", "/system", '"sys 日本"'.encode())]
    assert D.parse(body).system == (SystemBlock("sys 日本"),)


def test_float_and_escapes_match_the_sdk() -> None:
    req = Request(Route("anthropic", "m"), messages=(Message("user", (Text("a\u2028\x00\"é😀"),)),),
                  params=freeze({"max_tokens": 1, "temperature": 1e16, "top_p": 0.1}))
    assert D.render(req) == sdk_call(req)
    assert b"1e+16" in D.render(req) and "é😀".encode() in D.render(req)


def test_verbatim_single_plain_block_list_round_trips() -> None:
    body = sdk_body(model="m", max_tokens=5, system=[{"type": "text", "text": "s"}],
                    messages=[{"role": "user", "content": [{"type": "text", "text": "x"}]}], tools=[])
    parsed = D.parse(body)
    assert parsed.messages[0].parts == (Text("x"),) and "role" in parsed.messages[0].extra
    assert parsed.system[0].text == "s"
    assert D.render(parsed) == body


def test_tool_result_name_is_recovered_from_the_tool_use() -> None:
    body = D.render(Request(Route("anthropic", "m"), messages=(
        Message("assistant", (ToolCall("toolu_1", "grep", freeze({"q": "x"})),)),
        Message("user", (ToolResult("toolu_1", content="found"),)),
    ), params=freeze({"max_tokens": 5})))
    assert D.parse(body).messages[1].parts[0].name == "grep"


def test_cache_control_on_tool_result_tool_use_and_image_needs_no_verbatim_fallback() -> None:
    eph = {"type": "ephemeral"}
    body = sdk_body(model="m", max_tokens=5, messages=[
        {"role": "assistant", "content": [{"type": "tool_use", "id": "toolu_1", "name": "grep", "input": {"q": "x"},
                                           "cache_control": eph}]},
        {"role": "user", "content": [
            {"type": "image", "source": {"type": "url", "url": "https://x.test/a.png"}, "cache_control": eph},
            {"type": "tool_result", "tool_use_id": "toolu_1", "content": "found", "cache_control": eph},
        ]},
    ])
    parsed = D.parse(body)
    assert all("role" not in m.extra for m in parsed.messages)
    call, = parsed.messages[0].parts
    image, result = parsed.messages[1].parts
    assert call.cache_control == image.cache_control == result.cache_control == freeze(eph)
    assert D.render(parsed) == body
    # a breakpoint ahead of another key is not the canonical layout: kept verbatim, bytes intact
    odd = sdk_body(model="m", max_tokens=5, messages=[{"role": "user", "content": [
        {"type": "tool_result", "cache_control": eph, "tool_use_id": "toolu_1", "content": "found"}]}])
    parsed = D.parse(odd)
    assert "role" in parsed.messages[0].extra and parsed.messages[0].parts[0].cache_control == freeze(eph)
    assert D.render(parsed) == odd


def test_bad_input() -> None:
    with pytest.raises(InputError):
        D.parse(b"[]")
    with pytest.raises(InputError):
        D.parse(b'{"model":"m"}')
    with pytest.raises(InputError):
        D.render(Request(Route("anthropic", "m"), messages=(Message("user", (Text("\ud800"),)),)))
    with pytest.raises(InputError):
        D.render(Request(Route("anthropic", "m"), messages=(Message("system", (Text("x"),)),)))


def test_registered_and_detected() -> None:
    assert wire.get("anthropic-messages") is D
    body = json.loads(D.render(_plain_request()))
    assert D.detect(body)
    assert not D.detect({"model": "gpt", "messages": [{"role": "user", "content": "hi"}]})
    request = _plain_request()
    before = D.render(request)
    D.parse(before), D.cache_view(before)
    assert D.render(request) == before  # nothing mutated
