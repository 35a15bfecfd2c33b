"""Conformance: fidelity's OpenAI-family renderers against the real openai SDK.

The SDK client runs over an ``httpx.MockTransport`` that records the request
body (no network). Hypothesis generates canonical requests; a small
test-only adapter turns each into the keyword arguments a harness would pass
to ``client.chat.completions.create`` / ``client.responses.create`` (known
parameters as kwargs, the rest through ``extra_body``). Every example asserts
``captured == render(request)`` and ``render(parse(captured)) == captured``.
"""

from __future__ import annotations

import dataclasses
import inspect
import json
from typing import Any

import httpx
import openai
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from fidelity import wire
from fidelity.errors import InputError
from fidelity.model import (
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
    thaw,
)

# ------------------------------------------------------------------ SDK capture

_CAPTURED: list[bytes] = []


def _handler(request: httpx.Request) -> httpx.Response:
    _CAPTURED.append(request.content)
    return httpx.Response(200, json={})


def _client(base_url: str) -> openai.OpenAI:
    return openai.OpenAI(api_key="sk-test", base_url=base_url, max_retries=0,
                         http_client=httpx.Client(transport=httpx.MockTransport(_handler)))


CLIENTS = {
    "openai-chat": _client("https://api.openai.com/v1"),
    "openai-responses": _client("https://api.openai.com/v1"),
    "deepseek": _client("https://api.deepseek.com"),
    "dashscope": _client("https://dashscope.aliyuncs.com/compatible-mode/v1"),
    "vllm": _client("http://localhost:8000/v1"),
    "sglang": _client("http://localhost:30000/v1"),
}
CHAT_KWARGS = set(inspect.signature(CLIENTS["openai-chat"].chat.completions.create).parameters)
RESP_KWARGS = set(inspect.signature(CLIENTS["openai-responses"].responses.create).parameters)
_NOT_BODY = {"extra_headers", "extra_query", "extra_body", "timeout"}


def capture(dialect: str, **kwargs: Any) -> bytes:
    _CAPTURED.clear()
    client = CLIENTS[dialect]
    if dialect == "openai-responses":
        client.responses.create(**kwargs)
    else:
        client.chat.completions.create(**kwargs)
    assert len(_CAPTURED) == 1
    return _CAPTURED[0]


# ------------------------------------------------------------------ adapter (test-only)


def _args_string(call: ToolCall) -> str:
    if call.arguments_json is not None:
        return call.arguments_json
    return json.dumps(thaw(call.arguments), ensure_ascii=False, separators=(",", ":"))


def _split_params(params: dict[str, Any], known: set[str]) -> tuple[dict[str, Any], dict[str, Any]]:
    kwargs = {k: v for k, v in params.items() if k in known and k not in _NOT_BODY}
    extra = {k: v for k, v in params.items() if k not in kwargs}
    return kwargs, extra


def chat_kwargs(request: Request) -> dict[str, Any]:
    """What a harness passes to ``chat.completions.create`` for ``request``."""
    messages: list[dict[str, Any]] = []
    if request.system:
        if len(request.system) == 1 and request.system[0].cache_control is None:
            messages.append({"role": "system", "content": request.system[0].text})
        else:
            content = []
            for b in request.system:
                part = {"type": "text", "text": b.text}
                if b.cache_control is not None:
                    part["cache_control"] = thaw(b.cache_control)
                content.append(part)
            messages.append({"role": "system", "content": content})
    for m in request.messages:
        def part_obj(p: Any) -> dict[str, Any]:
            if isinstance(p, Image):
                img = {"url": p.url}
                if p.detail:
                    img["detail"] = p.detail
                return {"type": "image_url", "image_url": img}
            d = {"type": "text", "text": p.text}
            if p.cache_control is not None:
                d["cache_control"] = thaw(p.cache_control)
            return d

        if m.role == "tool":
            r = m.parts[0]
            messages.append({"role": "tool", "tool_call_id": r.call_id, "content": r.content})
            continue
        content_parts = [p for p in m.parts if isinstance(p, (Text, Image))]
        if len(content_parts) == 1 and isinstance(content_parts[0], Text) and content_parts[0].cache_control is None:
            content: Any = content_parts[0].text
        elif content_parts:
            content = [part_obj(p) for p in content_parts]
        else:
            content = None
        msg: dict[str, Any] = {"role": m.role, "content": content}
        if m.role == "assistant":
            reasoning = [p.text for p in m.parts if isinstance(p, Reasoning)]
            if reasoning:
                msg["reasoning_content"] = "".join(reasoning)
            calls = [p for p in m.parts if isinstance(p, ToolCall)]
            if calls:
                msg["tool_calls"] = [{"id": c.id, "type": "function",
                                      "function": {"name": c.name, "arguments": _args_string(c)}} for c in calls]
        messages.append(msg)
    kwargs, extra = _split_params(thaw(request.params), CHAT_KWARGS)
    kwargs.update(model=request.route.model, messages=messages)
    if request.tools:
        tools = []
        for t in request.tools:
            fn: dict[str, Any] = {"name": t.name}
            if t.description is not None:
                fn["description"] = t.description
            if t.parameters is not None:
                fn["parameters"] = thaw(t.parameters)
            fn.update(thaw(t.extra))
            tools.append({"type": "function", "function": fn})
        kwargs["tools"] = tools
    if extra:
        kwargs["extra_body"] = extra
    return kwargs


def responses_kwargs(request: Request) -> dict[str, Any]:
    """What a harness passes to ``responses.create`` for ``request``."""
    items: list[dict[str, Any]] = []
    for m in request.messages:
        content = [p for p in m.parts if isinstance(p, (Text, Image))]
        if content:
            if len(content) == 1 and isinstance(content[0], Text):
                items.append({"role": m.role, "content": content[0].text})
            else:
                items.append({"role": m.role, "content": [
                    {"type": "input_text", "text": p.text} if isinstance(p, Text)
                    else dict({"type": "input_image", "image_url": p.url}, **({"detail": p.detail} if p.detail else {}))
                    for p in content]})
        for p in m.parts:
            if isinstance(p, ToolCall):
                items.append({"type": "function_call", "call_id": p.id, "name": p.name, "arguments": _args_string(p)})
            elif isinstance(p, ToolResult):
                items.append({"type": "function_call_output", "call_id": p.call_id, "output": p.content})
    kwargs, extra = _split_params(thaw(request.params), RESP_KWARGS)
    kwargs["model"] = request.route.model
    if items:
        kwargs["input"] = items
    if request.system:
        kwargs["instructions"] = "\n\n".join(b.text for b in request.system)
    if request.tools:
        tools = []
        for t in request.tools:
            d: dict[str, Any] = {"type": "function", "name": t.name}
            if t.description is not None:
                d["description"] = t.description
            if t.parameters is not None:
                d["parameters"] = thaw(t.parameters)
            d.update(thaw(t.extra))
            tools.append(d)
        kwargs["tools"] = tools
    if extra:
        kwargs["extra_body"] = extra
    return kwargs


# ------------------------------------------------------------------ strategies

SAMPLES = ["写一个函数", "コード", "한국어", "emoji 😀👩‍💻🏳️‍🌈", "e\u0301 a\u0308 n\u0303", "tab\tnl\n\"q\" \\ \x00 \x1f \x7f",
           "\u2028\u2029", "ℝ∑∫", "", " "]
text = st.one_of(st.sampled_from(SAMPLES),
                 st.text(st.characters(exclude_categories=("Cs",)), max_size=30),
                 st.text(st.sampled_from("ab{}[]\":,\\/~é中😀\u0301\n"), max_size=20))
key = st.one_of(st.sampled_from(["type", "properties", "required", "path", "路径", "a/b", "x~y", "😀"]),
                st.text(st.characters(exclude_categories=("Cs",)), min_size=1, max_size=8))
scalar = st.one_of(st.none(), st.booleans(), st.integers(-2**63, 2**64),
                   st.floats(allow_nan=False, allow_infinity=False), text)
json_value = st.recursive(scalar, lambda c: st.lists(c, max_size=3) | st.dictionaries(key, c, max_size=4), max_leaves=12)
json_object = st.dictionaries(key, json_value, max_size=5)


@st.composite
def schema(draw: Any) -> dict[str, Any]:
    """A nested JSON schema whose key order is part of the example."""
    props = draw(st.dictionaries(key, st.recursive(
        st.fixed_dictionaries({"type": st.sampled_from(["string", "integer", "boolean"])},
                              optional={"description": text, "enum": st.lists(text, max_size=2)}),
        lambda c: st.fixed_dictionaries({"type": st.just("object"), "properties": st.dictionaries(key, c, max_size=3)})
        | st.fixed_dictionaries({"type": st.just("array"), "items": c}),
        max_leaves=6), max_size=4))
    out = {"type": "object", "properties": props, "required": list(props)[: draw(st.integers(0, len(props)))]}
    if draw(st.booleans()):
        out = dict(reversed(list(out.items())))
    return out


names = st.text(st.sampled_from("abcdefghijklmnopqrstuvwxyz_0123456789"), min_size=1, max_size=12)
ids = st.text(st.sampled_from("abcdefABCDEF0123456789_"), min_size=1, max_size=10).map(lambda s: "call_" + s)
image = st.builds(Image, st.sampled_from(["https://example.com/a.png", "data:image/png;base64,iVBORw0KGgo="]),
                  detail=st.sampled_from([None, "low", "high", "auto"]))
CC = {"type": "ephemeral"}


@st.composite
def tool_call(draw: Any) -> ToolCall:
    args = draw(json_object)
    exact = draw(st.sampled_from([None, "compact", "spaced"]))
    arguments_json = None if exact is None else (
        json.dumps(args, ensure_ascii=False, separators=(",", ":")) if exact == "compact" else json.dumps(args))
    return ToolCall(draw(ids), draw(names), arguments=args, arguments_json=arguments_json)


@st.composite
def request(draw: Any, dialect: str) -> Request:
    chat = dialect != "openai-responses"
    cache_parts = dialect == "dashscope"
    reasoning = dialect == "deepseek"

    def text_part() -> Text:
        return Text(draw(text), cache_control=CC if cache_parts and draw(st.booleans()) else None)

    system: tuple[SystemBlock, ...] = ()
    n_sys = draw(st.integers(0, 2 if chat else 1))
    if n_sys:
        system = tuple(SystemBlock(draw(text), cache_control=CC if cache_parts and draw(st.booleans()) else None)
                       for _ in range(n_sys))
    tools = tuple(Tool(n, description=draw(st.none() | text), parameters=draw(st.none() | schema()),
                       extra=draw(st.sampled_from([{}, {"strict": True}, {"strict": False}])))
                  for n in draw(st.lists(names, max_size=3, unique=True)))
    messages: list[Message] = []
    for _ in range(draw(st.integers(0, 5))):
        kind = draw(st.sampled_from(["user", "user", "assistant", "tool"] + (["developer"] if chat else [])))
        if kind in ("user", "developer"):
            parts = [draw(st.one_of(st.builds(lambda: text_part()), image)) if kind == "user" else text_part()
                     for _ in range(draw(st.integers(1, 3)))]
            messages.append(Message(kind, tuple(parts)))
        elif kind == "assistant":
            parts = []
            if reasoning and draw(st.booleans()):
                parts.append(Reasoning(draw(text)))
            calls = draw(st.lists(tool_call(), max_size=2))
            if draw(st.booleans()) or not calls:
                parts.append(Text(draw(text)))
            parts.extend(calls)
            messages.append(Message("assistant", tuple(parts)))
        else:
            messages.append(Message("tool", (ToolResult(draw(ids), content=draw(text)),)))
    params: dict[str, Any] = {}
    if chat:
        optional = {
            "temperature": st.none() | st.floats(0, 2), "max_completion_tokens": st.integers(1, 10**6),
            "tool_choice": st.sampled_from(["auto", "none", "required"]), "parallel_tool_calls": st.booleans(),
            "reasoning_effort": st.sampled_from(["low", "medium", "high", None]), "stream": st.booleans(),
            "prompt_cache_key": text, "seed": st.integers(0, 2**31), "user": text, "stop": st.none() | st.lists(text, max_size=2),
            "response_format": st.builds(lambda s: {"type": "json_schema", "json_schema": {"name": "out", "schema": s}}, schema()),
            "metadata": st.dictionaries(names, text, max_size=2),
        }
        extras = {"deepseek": {"thinking": st.sampled_from([{"type": "enabled"}, {"type": "disabled"}])},
                  "dashscope": {"enable_thinking": st.booleans(), "thinking_budget": st.integers(0, 4096)},
                  "vllm": {"chat_template_kwargs": st.fixed_dictionaries({"enable_thinking": st.booleans()}), "top_k": st.integers(-1, 50)},
                  "sglang": {"chat_template_kwargs": st.fixed_dictionaries({"enable_thinking": st.booleans()})},
                  "openai-chat": {"x_custom": json_value}}[dialect]
    else:
        optional = {
            "temperature": st.none() | st.floats(0, 2), "max_output_tokens": st.integers(16, 10**5),
            "tool_choice": st.sampled_from(["auto", "none", "required"]), "parallel_tool_calls": st.booleans(),
            "reasoning": st.fixed_dictionaries({"effort": st.sampled_from(["low", "medium", "high"])}, optional={"summary": st.just("auto")}),
            "text": st.fixed_dictionaries({"verbosity": st.sampled_from(["low", "high"])}), "store": st.booleans(),
            "prompt_cache_key": text, "stream": st.booleans(), "previous_response_id": st.none() | names,
        }
        extras = {"x_custom": json_value}
    pool = list(optional.items()) + list(extras.items())
    for name in draw(st.permutations([k for k, _ in pool])):
        if draw(st.integers(0, 2)) == 0:
            params[name] = draw(dict(pool)[name])
    if not chat and not messages:
        params["input"] = draw(text)
    return Request(Route("test", draw(st.sampled_from(["gpt-5", "deepseek-v4-pro", "qwen3-coder-plus", "模型"]))),
                   system, tools, tuple(messages), params)


def _check(dialect: str, req: Request) -> None:
    d = wire.get(dialect)
    kwargs = responses_kwargs(req) if dialect == "openai-responses" else chat_kwargs(req)
    captured = capture(dialect, **kwargs)
    assert d.render(req) == captured
    assert d.render(d.parse(captured)) == captured
    view = d.cache_view(captured)
    assert view[0].kind == "params" and view[0].pointer == ""
    for seg in view[1:]:
        assert seg.data in captured


@pytest.mark.parametrize("dialect", ["openai-chat", "openai-responses", "deepseek", "dashscope", "vllm", "sglang"])
def test_render_matches_sdk(dialect: str) -> None:
    @settings(max_examples=200 if dialect == "sglang" else 300)
    @given(request(dialect))
    def run(req: Request) -> None:
        _check(dialect, req)

    run()


# ------------------------------------------------------------------ verbatim layouts

@st.composite
def raw_chat_message(draw: Any) -> dict[str, Any]:
    """Messages as real harnesses write them, in any key order and shape."""
    msg = draw(st.sampled_from([
        {"role": "user", "content": [{"type": "text", "text": "one part"}]},
        {"content": "key order reversed", "role": "user"},
        {"role": "assistant", "tool_calls": [{"id": "c1", "type": "function", "function": {"arguments": "{}", "name": "f"}}], "content": ""},
        {"role": "assistant", "content": "hi", "refusal": None},
        {"role": "user", "content": "hi", "name": "alice"},
        {"role": "tool", "content": "out", "tool_call_id": "c1"},
        {"role": "user", "content": [{"text": "t", "type": "text"}, {"type": "input_audio", "input_audio": {"data": "AA==", "format": "wav"}}]},
    ]))
    if "content" in msg and isinstance(msg["content"], str):
        msg = dict(msg, content=draw(text))
    return msg


@settings(max_examples=200)
@given(st.lists(raw_chat_message(), min_size=1, max_size=5))
def test_parse_keeps_any_layout_verbatim(messages: list[dict[str, Any]]) -> None:
    for dialect in ("openai-chat", "deepseek", "dashscope", "vllm"):
        captured = capture(dialect, model="m", messages=messages)
        d = wire.get(dialect)
        assert d.render(d.parse(captured)) == captured


def test_parse_fills_parts_for_verbatim_messages() -> None:
    captured = capture("openai-chat", model="m", messages=[{"content": "reversed", "role": "user"}])
    req = wire.get("openai-chat").parse(captured)
    assert req.messages[0].text() == "reversed"
    assert list(req.messages[0].extra) == ["content", "role"]


# ------------------------------------------------------------------ facts about the SDK itself

def test_sdk_top_level_order_is_signature_literal_not_caller_order() -> None:
    a = capture("openai-chat", temperature=0.5, messages=[{"role": "user", "content": "x"}], model="m", stream=True)
    assert a.startswith(b'{"model":"m","stream":true,"messages":')
    assert a.endswith(b',"temperature":0.5}')


def test_sdk_extra_body_overrides_in_place_and_appends_new_keys() -> None:
    body = capture("deepseek", model="m", messages=[], temperature=1.0,
                   extra_body={"thinking": {"type": "enabled"}, "temperature": 0.0})
    assert body == b'{"model":"m","messages":[],"temperature":0.0,"thinking":{"type":"enabled"}}'
    req = wire.get("deepseek").parse(body)
    assert wire.get("deepseek").render(req) == body


def test_explicit_none_is_null_and_omitted_is_absent() -> None:
    body = capture("openai-chat", model="m", messages=[], temperature=None)
    assert body == b'{"model":"m","messages":[],"temperature":null}'
    assert wire.get("openai-chat").render(Request(Route("openai", "m"), params={"temperature": None})) == body


def test_lone_surrogate_cannot_be_sent() -> None:
    with pytest.raises(UnicodeEncodeError):
        capture("openai-chat", model="m", messages=[{"role": "user", "content": "\ud800"}])
    req = Request(Route("openai", "m"), messages=(Message("user", (Text("\ud800"),)),))
    with pytest.raises(InputError, match="lone surrogate"):
        wire.get("openai-chat").render(req)


def test_escaped_surrogate_pair_parses_and_renders_raw_utf8() -> None:
    body = b'{"model":"m","messages":[{"role":"user","content":"\\ud83d\\ude00"}]}'
    d = wire.get("openai-chat")
    assert d.parse(body).messages[0].text() == "😀"
    # the parsed request keeps its escapes; the SDK itself would send raw UTF-8
    assert d.render(d.parse(body)) == body
    fresh = dataclasses.replace(d.parse(body), layout=None)
    assert d.render(fresh) == '{"model":"m","messages":[{"role":"user","content":"😀"}]}'.encode()
