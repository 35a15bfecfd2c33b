"""The gemini dialect against the official ``google-genai`` SDK.

The real ``genai.Client`` gets an ``httpx2.Client`` with a mock transport
through ``HttpOptions(httpx_client=...)`` (google/genai/_api_client.py uses
an injected client as is); the captured body is compared byte for byte.
No network.
"""

from __future__ import annotations

import base64
import dataclasses
import json
import warnings
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

genai = pytest.importorskip("google.genai")
httpx2 = pytest.importorskip("httpx2")
from google.genai import types  # noqa: E402

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
from fidelity.wire._gemini_schema import dump_schema  # noqa: E402
from fidelity.wire.gemini import GEMINI as D  # noqa: E402

_CAPTURED: list[tuple[str, bytes]] = []


def _handler(request: Any) -> Any:
    _CAPTURED.append((str(request.url), request.content))
    return httpx2.Response(200, json={"candidates": [{"content": {"role": "model", "parts": [{"text": "ok"}]}}]})


CLIENT = genai.Client(
    api_key="x",
    http_options=types.HttpOptions(httpx_client=httpx2.Client(transport=httpx2.MockTransport(_handler))),
)


def sdk_body(**kwargs: Any) -> bytes:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        CLIENT.models.generate_content(**kwargs)
    return _CAPTURED.pop()[1]


# --------------------------------------- test-only adapter: Request -> SDK call


def _part(p: Any) -> Any:
    if isinstance(p, Reasoning):
        sig = base64.urlsafe_b64decode(p.signature) if p.signature is not None else None
        return types.Part(text=p.text, thought=True, thought_signature=sig)
    if isinstance(p, Text):
        return types.Part(text=p.text)
    if isinstance(p, ToolCall):
        return types.Part(function_call=types.FunctionCall(id=p.id, name=p.name, args=thaw(p.arguments)))
    if isinstance(p, ToolResult):
        return types.Part(function_response=types.FunctionResponse(id=p.call_id, name=p.name, response=thaw(p.content)))
    assert isinstance(p, Image)
    return types.Part(file_data=types.FileData(file_uri=p.url, mime_type=p.media_type))


_GEN = {"temperature": "temperature", "topK": "top_k", "maxOutputTokens": "max_output_tokens",
        "stopSequences": "stop_sequences", "seed": "seed"}


def sdk_call(request: Request, original_schemas: dict[str, Any]) -> bytes:
    contents = [types.Content(role={"assistant": "model"}.get(m.role, m.role), parts=[_part(p) for p in m.parts])
                for m in request.messages]
    cfg: dict[str, Any] = {}
    if request.system:
        cfg["system_instruction"] = (request.system[0].text if len(request.system) == 1 else
                                     types.Content(role="user", parts=[types.Part(text=b.text) for b in request.system]))
    if request.tools:
        cfg["tools"] = [types.Tool(function_declarations=[
            types.FunctionDeclaration(name=t.name, description=t.description, parameters=original_schemas.get(t.name))
            for t in request.tools
        ])]
    params = thaw(request.params)
    for key, value in params.get("generationConfig", {}).items():
        if key == "thinkingConfig":
            cfg["thinking_config"] = types.ThinkingConfig(**value)
        else:
            cfg[_GEN[key]] = value
    if "toolConfig" in params:
        fc = params["toolConfig"]["functionCallingConfig"]
        cfg["tool_config"] = types.ToolConfig(function_calling_config=types.FunctionCallingConfig(
            mode=fc["mode"].lower(), allowed_function_names=fc.get("allowedFunctionNames")))
    config = types.GenerateContentConfig(**cfg) if (cfg or "generationConfig" in params) else None
    return sdk_body(model="gemini-2.5-flash", contents=contents, config=config)


# ---------------------------------------------------------------- strategies

ALPHABET = st.one_of(
    st.characters(codec="utf-8", exclude_categories=("Cs",)),
    st.sampled_from(list("日本語中文한국어😀🧪👍🏽\u0301\u0308\u200d\u2028\"\\/\n\t\x00\x7f é")),
)
texts = st.text(ALPHABET, max_size=20)
keys = st.text(ALPHABET, min_size=1, max_size=8)
names = st.from_regex(r"[a-zA-Z_][a-zA-Z0-9_]{0,12}", fullmatch=True)
floats = st.floats(allow_nan=False, allow_infinity=False)
json_values = st.recursive(
    st.one_of(st.none(), st.booleans(), st.integers(-(2**60), 2**60), floats, texts),
    lambda inner: st.one_of(st.lists(inner, max_size=3), st.dictionaries(keys, inner, max_size=3)),
    max_leaves=8,
)
json_objects = st.dictionaries(keys, json_values, max_size=4)
type_names = st.sampled_from(["string", "STRING", "String", "integer", "number", "boolean", "NUMBER"])


@st.composite
def caller_schemas(draw: Any, depth: int = 2) -> dict[str, Any]:
    """A ``types.Schema`` input as a caller writes it: lower-case types,
    camelCase or snake_case names, keys in any order, nested."""
    kind = draw(st.sampled_from(["object", "array", "scalar"] if depth else ["scalar"]))
    alias = draw(st.booleans())
    members: list[tuple[str, Any]] = []
    if kind == "object":
        members.append(("type", draw(st.sampled_from(["object", "OBJECT", "Object"]))))
        props = draw(st.dictionaries(keys, caller_schemas(depth - 1), max_size=3))
        members.append(("properties", props))
        if props and draw(st.booleans()):
            members.append(("required", draw(st.lists(st.sampled_from(sorted(props)), unique=True))))
        if props and draw(st.booleans()):
            members.append(("propertyOrdering" if alias else "property_ordering", list(props)))
    elif kind == "array":
        members.append(("type", "array"))
        members.append(("items", draw(caller_schemas(depth - 1))))
        if draw(st.booleans()):
            members.append(("maxItems" if alias else "max_items", draw(st.integers(0, 9))))
    else:
        members.append(("type", draw(type_names)))
        extras = {
            "description": texts, "enum": st.lists(texts, min_size=1, max_size=3), "format": st.sampled_from(["int32", "date-time"]),
            "nullable": st.booleans(), "maximum": st.one_of(st.integers(-99, 99), floats), "title": texts,
            "default": json_values, "example": json_values,
        }
        for k in draw(st.lists(st.sampled_from(sorted(extras)), unique=True, max_size=3)):
            members.append((k, draw(extras[k])))
        if depth and draw(st.booleans()):
            members.append(("anyOf" if alias else "any_of", draw(st.lists(caller_schemas(0), max_size=2))))
    return dict(draw(st.permutations(members)))


signatures = st.binary(min_size=1, max_size=24).map(lambda b: base64.urlsafe_b64encode(b).decode())
call_ids = st.one_of(st.none(), st.text("abcdef0123456789-", min_size=1, max_size=8))
images = st.builds(Image, st.sampled_from(["https://generativelanguage.googleapis.com/v1beta/files/abc", "gs://b/日本.png"]),
                   media_type=st.sampled_from([None, "image/png"]))
user_parts = st.one_of(st.builds(Text, texts), images,
                       st.builds(ToolResult, call_ids, name=names, content=json_objects))
model_parts = st.one_of(st.builds(Text, texts), st.builds(Reasoning, texts, signature=st.one_of(st.none(), signatures)),
                        st.builds(ToolCall, call_ids, names, arguments=json_objects))


@st.composite
def requests(draw: Any) -> tuple[Request, dict[str, Any]]:
    msgs = []
    for i in range(draw(st.integers(1, 5))):
        role = "user" if i % 2 == 0 else "assistant"
        msgs.append(Message(role, tuple(draw(st.lists(user_parts if role == "user" else model_parts, min_size=1, max_size=3)))))
    system = tuple(draw(st.lists(st.builds(SystemBlock, texts), max_size=3)))
    originals: dict[str, Any] = {}
    tools = []
    for name in draw(st.lists(names, unique=True, max_size=3)):
        schema = draw(st.one_of(st.none(), caller_schemas()))
        originals[name] = schema
        tools.append(Tool(name, draw(st.one_of(st.none(), texts)), dump_schema(schema) if schema is not None else None))
    gen: dict[str, Any] = {}
    if draw(st.booleans()):
        gen["temperature"] = float(draw(st.integers(0, 2)))
    if draw(st.booleans()):
        gen["topK"] = float(draw(st.integers(1, 40)))
    if draw(st.booleans()):
        gen["maxOutputTokens"] = draw(st.integers(1, 65536))
    if draw(st.booleans()):
        gen["stopSequences"] = draw(st.lists(texts, max_size=2))
    if draw(st.booleans()):
        gen["thinkingConfig"] = draw(st.sampled_from([
            {"include_thoughts": True, "thinking_budget": 1024}, {"thinking_budget": 0}, {"thinking_level": "HIGH"},
        ]))
    params: dict[str, Any] = {}
    if draw(st.booleans()):
        fc: dict[str, Any] = {}
        if draw(st.booleans()):
            fc["allowedFunctionNames"] = ["f"]
        fc["mode"] = draw(st.sampled_from(["AUTO", "ANY", "NONE"]))
        params["toolConfig"] = {"functionCallingConfig": fc}
    if gen or system or tools or params or draw(st.booleans()):
        params["generationConfig"] = gen
    return Request(Route("gemini", ""), system, tuple(tools), tuple(msgs), freeze(params)), originals


# ---------------------------------------------------------------- properties


@settings(max_examples=300)
@given(requests())
def test_render_is_what_the_sdk_sends_and_parse_inverts_it(case: tuple[Request, dict[str, Any]]) -> None:
    request, originals = case
    captured = sdk_call(request, originals)
    assert D.render(request) == captured
    parsed = D.parse(captured)
    assert D.render(parsed) == captured
    assert parsed == request
    for s in D.cache_view(captured)[1:]:
        assert json.loads(s.data) == _at(json.loads(captured), s.pointer)


@settings(max_examples=300)
@given(caller_schemas(depth=3))
def test_schema_transformation_matches_types_schema(schema: dict[str, Any]) -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        expected = types.Schema.model_validate(schema).model_dump(exclude_none=True)
    assert json.dumps(dump_schema(schema)) == json.dumps(expected)
    assert dump_schema(dump_schema(schema)) == dump_schema(schema)  # idempotent: parsed bodies re-render


def _at(obj: Any, ptr: str) -> Any:
    for token in ptr.split("/")[1:]:
        obj = obj[int(token)] if isinstance(obj, list) else obj[token.replace("~1", "/").replace("~0", "~")]
    return obj


# ------------------------------------------------------------------ examples


def _body() -> bytes:
    return sdk_body(
        model="gemini-2.5-flash",
        contents=[types.Content(role="user", parts=[types.Part(text="héllo 日本 😀")])],
        config=types.GenerateContentConfig(
            system_instruction="Be brief.",
            temperature=1,
            thinking_config=types.ThinkingConfig(thinking_budget=128),
            tool_config=types.ToolConfig(function_calling_config=types.FunctionCallingConfig(mode="auto")),
            tools=[types.Tool(function_declarations=[types.FunctionDeclaration(
                name="read", description="Read", parameters={"type": "object", "properties": {"path": {"type": "string"}}})])],
        ),
    )


def test_wire_facts() -> None:
    body = _body()
    assert body == (
        b'{"contents": [{"parts": [{"text": "h\\u00e9llo \\u65e5\\u672c \\ud83d\\ude00"}], "role": "user"}], '
        b'"systemInstruction": {"parts": [{"text": "Be brief."}], "role": "user"}, '
        b'"tools": [{"functionDeclarations": [{"description": "Read", "name": "read", "parameters": '
        b'{"properties": {"path": {"type": "STRING"}}, "type": "OBJECT"}}]}], '
        b'"toolConfig": {"functionCallingConfig": {"mode": "AUTO"}}, '
        b'"generationConfig": {"temperature": 1.0, "thinkingConfig": {"thinking_budget": 128}}}'
    )
    assert D.render(D.parse(body)) == body


def test_cache_view_order() -> None:
    view = D.cache_view(_body())
    assert [(s.kind, s.pointer) for s in view] == [
        ("params", ""), ("system", "/systemInstruction/parts/0"),
        ("tools", "/tools/0/functionDeclarations/0"), ("message", "/contents/0"),
    ]
    assert view[0].data == b'"toolConfig": {"functionCallingConfig": {"mode": "AUTO"}}, "thinkingConfig": {"thinking_budget": 128}'


def test_render_normalises_a_hand_written_request() -> None:
    req = Request(Route("gemini", "gemini-2.5-pro"), system=(SystemBlock("s"),),
                  tools=(Tool("f", None, freeze({"type": "object", "properties": {"b": {"type": "integer", "maximum": 3}}})),),
                  messages=(Message("user", (Text("x"),)),),
                  params=freeze({"generationConfig": {"thinkingConfig": {"thinkingBudget": 5}, "temperature": 0}}))
    body = D.render(req)
    expected = sdk_body(model="gemini-2.5-pro", contents="x", config=types.GenerateContentConfig(
        system_instruction="s", temperature=0, thinking_config={"thinking_budget": 5},
        tools=[types.Tool(function_declarations=[{"name": "f", "parameters": {"type": "object", "properties": {"b": {"type": "integer", "maximum": 3}}}}])]))
    assert body == expected


def test_verbatim_fallbacks_round_trip() -> None:
    body = sdk_body(model="m", contents=[
        types.Content(role="model", parts=[types.Part(function_call=types.FunctionCall(name="f", args={}), thought_signature=b"\x01\x02")]),
        types.Content(parts=[types.Part(text="no role")]),
    ], config=types.GenerateContentConfig(system_instruction=types.Content(parts=[types.Part(text="a")]),
                                          tools=[types.Tool(google_search=types.GoogleSearch())]))
    parsed = D.parse(body, model="m")
    assert parsed.route.model == "m"
    assert parsed.messages[0].parts == (ToolCall(None, "f", freeze({})),)  # type: ignore[arg-type]
    assert "parts" in parsed.messages[0].extra and "parts" in parsed.messages[1].extra
    assert parsed.system == (SystemBlock("a"),) and "systemInstruction" in parsed.params
    assert D.render(parsed) == body


def test_lone_surrogate_is_escaped_like_the_sdk() -> None:
    req = Request(Route("gemini", "m"), messages=(Message("user", (Text("\ud800x"),)),))
    assert D.render(req) == sdk_body(model="m", contents=[types.Content(role="user", parts=[types.Part(text="\ud800x")])])


def test_bad_input() -> None:
    with pytest.raises(InputError):
        D.parse(b'{"model": "x"}')
    with pytest.raises(InputError):
        dump_schema({"type": "object", "$schema": "x"})
    with pytest.raises(InputError):
        dump_schema({"type": "object", "maxItems": 1.5})


def test_registered_and_detected() -> None:
    assert wire.get("gemini") is D
    assert D.detect(json.loads(_body()))
    assert not D.detect({"model": "m", "messages": []})
    r = D.parse(_body())
    assert dataclasses.replace(r) == r
