"""Gemini API ``generateContent`` (Developer API): the bytes google-genai 3.6.1
sends for ``client.models.generate_content`` (``json.dumps`` in
``_api_client.BaseApiClient._request_once``; pydantic dumps in snake_case; all
function declarations in one trailing tool, ``_transformers.t_tools``; the
model in the URL), and the cache view: params, system instruction, tools,
contents (https://ai.google.dev/gemini-api/docs/caching; system before tools
is an assumption). Details: docs/wire-anthropic-gemini.md.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from ..errors import InputError
from ..jsonbytes import dumps_pyjson, element_spans, loads, member_spans, pointer, value_spans
from ..model import (
    Image,
    Message,
    Part,
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
from . import Segment, register
from ._gemini_schema import dump_schema, enum_upper
from .profiles import GENAI_KEYS, attach, write_request

__all__ = ["Gemini", "GEMINI", "CACHE_MEMBERS"]

#: Keys that only a ``GenerateContentConfig`` can produce; any of them means
#: the SDK also sends ``generationConfig`` (at least ``{}``).
_CONFIG_KEYS = frozenset(GENAI_KEYS) - {"contents", "generationConfig"}

#: ``generationConfig`` order (models._GenerateContentConfig_to_mldev) and the
#: float-typed fields of ``types.GenerateContentConfig``.
GENERATION_KEYS: tuple[str, ...] = (
    "temperature", "topP", "topK", "candidateCount", "maxOutputTokens", "stopSequences",
    "responseLogprobs", "logprobs", "presencePenalty", "frequencyPenalty", "seed",
    "responseMimeType", "responseSchema", "responseJsonSchema", "responseModalities",
    "mediaResolution", "speechConfig", "thinkingConfig", "imageConfig",
    "enableEnhancedCivicAnswers", "audioTranscriptionConfig",
)
_FLOAT_KEYS = frozenset(("temperature", "topP", "topK", "presencePenalty", "frequencyPenalty"))

#: ``types.ThinkingConfig`` fields and ``types.ThinkingLevel`` names.
_THINKING = (("include_thoughts", "includeThoughts"), ("thinking_budget", "thinkingBudget"),
             ("thinking_level", "thinkingLevel"))
_THINKING_LEVELS = frozenset(("THINKING_LEVEL_UNSPECIFIED", "MINIMAL", "LOW", "MEDIUM", "HIGH", "XHIGH"))
#: ``types.FunctionCallingConfigMode`` names.
_FC_MODES = frozenset(("MODE_UNSPECIFIED", "AUTO", "ANY", "NONE", "VALIDATED"))
#: ``types.FunctionDeclaration`` fields in order; ``types.Behavior`` names.
_DECL_KEYS = ("description", "name", "parameters", "parameters_json_schema", "response",
              "response_json_schema", "behavior")
_BEHAVIORS = frozenset(("UNSPECIFIED", "BLOCKING", "NON_BLOCKING"))

#: the params segment's members: (pointer of the object, key)
CACHE_MEMBERS = (("", "cachedContent"), ("", "toolConfig"), ("/generationConfig", "thinkingConfig"))

_DATA_URL = re.compile(r"data:([^;,]+);base64,(.*)\Z", re.DOTALL)


def _same(a: Any, b: Any) -> bool:
    try:
        return dumps_pyjson(a) == dumps_pyjson(b)
    except (InputError, ValueError):
        return False


# ------------------------------------------------------------------ render


def _render_part(part: Part) -> dict[str, Any]:
    if isinstance(part, Text):
        return {"text": part.text}
    if isinstance(part, Reasoning):
        out: dict[str, Any] = {"text": part.text, "thought": True}
        if part.signature is not None:
            out["thoughtSignature"] = part.signature
        return out
    if isinstance(part, ToolCall):
        call: dict[str, Any] = {}
        if part.id is not None:
            call["id"] = part.id
        if part.arguments is not None:
            call["args"] = thaw(part.arguments)
        call["name"] = part.name
        return {"functionCall": call}
    if isinstance(part, ToolResult):
        resp: dict[str, Any] = {}
        if part.call_id is not None:
            resp["id"] = part.call_id
        if part.name is not None:
            resp["name"] = part.name
        resp["response"] = _response_object(part)
        return {"functionResponse": resp}
    if isinstance(part, Image):
        m = _DATA_URL.match(part.url)
        if m:
            return {"inlineData": {"data": m.group(2), "mime_type": m.group(1)}}
        data = {"file_uri": part.url}
        if part.media_type is not None:
            data["mime_type"] = part.media_type
        return {"fileData": data}
    raise InputError(f"gemini cannot render a {type(part).__name__} part")


def _response_object(result: ToolResult) -> Any:
    """``functionResponse.response``: the object, or text under ``output``
    (``error`` for a failed call; https://ai.google.dev/gemini-api/docs/function-calling)."""
    content = result.content
    if isinstance(content, Mapping):
        return thaw(content)
    if isinstance(content, tuple):
        content = "".join(p.text for p in content if isinstance(p, Text))
    return {"error" if result.is_error else "output": content}


def _render_content(message: Message) -> dict[str, Any]:
    if "parts" in message.extra:
        return thaw(message.extra)  # verbatim
    role = {"assistant": "model", "tool": "user"}.get(message.role, message.role)
    if role in ("system", "developer"):
        raise InputError("gemini has no system messages; put system text in Request.system")
    return {"parts": [_render_part(p) for p in message.parts], "role": role}


def _render_decl(tool: Tool) -> dict[str, Any]:
    fields: dict[str, Any] = dict(thaw(tool.extra))
    fields["name"] = tool.name
    if tool.description is not None:
        fields["description"] = tool.description
    if tool.parameters is not None:
        fields["parameters"] = dump_schema(tool.parameters, "/parameters")
    if fields.get("response") is not None:
        fields["response"] = dump_schema(fields["response"], "/response")
    if fields.get("behavior") is not None:
        fields["behavior"] = enum_upper(fields["behavior"], _BEHAVIORS, "/behavior")
    # keys FunctionDeclaration has no field for (another dialect's
    # ``strict``, ``cache_control``...) are not sent; None means unset.
    return {k: fields[k] for k in _DECL_KEYS if fields.get(k) is not None}


def _render_thinking(value: Any) -> Any:
    if not isinstance(value, Mapping):
        return thaw(value)
    out: dict[str, Any] = {}
    for name, alias in _THINKING:
        v = value.get(name, value.get(alias))
        if v is not None:
            out[name] = enum_upper(v, _THINKING_LEVELS, "/generationConfig/thinkingConfig") if name == "thinking_level" else thaw(v)
    out.update((k, thaw(v)) for k, v in value.items() if k not in out and k not in dict(_THINKING).values())
    return out


def _render_generation(value: Any) -> Any:
    if not isinstance(value, Mapping):
        return thaw(value)
    fields = dict(value)
    out: dict[str, Any] = {}
    for key in (*GENERATION_KEYS, *fields):
        if key in out or key not in fields or fields[key] is None:
            continue
        v = fields[key]
        if key in _FLOAT_KEYS and isinstance(v, int) and not isinstance(v, bool):
            v = float(v)
        elif key == "responseSchema":
            v = dump_schema(v, "/generationConfig/responseSchema")
        elif key == "thinkingConfig":
            v = _render_thinking(v)
        out[key] = thaw(v)
    return out


def _render_tool_config(value: Any) -> Any:
    if not isinstance(value, Mapping):
        return thaw(value)
    out: dict[str, Any] = {}
    for key in ("retrievalConfig", "functionCallingConfig", "includeServerSideToolInvocations", *value):
        if key in out or value.get(key) is None:
            continue
        v = value[key]
        if key == "functionCallingConfig" and isinstance(v, Mapping):
            fc: dict[str, Any] = {}
            for k in ("allowedFunctionNames", "mode", *v):
                if k not in fc and v.get(k) is not None:
                    fc[k] = enum_upper(v[k], _FC_MODES, "/toolConfig/functionCallingConfig/mode") if k == "mode" else thaw(v[k])
            v = fc
        out[key] = thaw(v)
    return out


def render_body(request: Request, *, sdk: bool = True) -> dict[str, Any]:
    """The body as an ordered dict. ``sdk``: apply what google-genai does to a
    config (float temperatures, ``thinkingConfig`` spelling, upper-case enums,
    schema dumping, an empty ``generationConfig``); else parameters go as they are."""
    fields: dict[str, Any] = {}
    for key, value in request.params.items():
        if key == "contents":
            raise InputError("Request.params must not hold 'contents'; it is Request.messages")
        if key == "generationConfig" and sdk:
            value = _render_generation(value)
        elif key == "toolConfig" and sdk:
            value = _render_tool_config(value)
        fields[key] = thaw(value)
    fields["contents"] = [_render_content(m) for m in request.messages]
    if request.system and "systemInstruction" not in fields:
        fields["systemInstruction"] = {"parts": [{"text": b.text} for b in request.system], "role": "user"}
    if request.tools and "tools" not in fields:
        fields["tools"] = [{"functionDeclarations": [_render_decl(t) for t in request.tools]}]
    if sdk and "generationConfig" not in fields and any(k in fields for k in _CONFIG_KEYS):
        fields["generationConfig"] = {}
    body = {k: fields[k] for k in GENAI_KEYS if k in fields}
    body.update((k, v) for k, v in fields.items() if k not in body)
    return body


# ------------------------------------------------------------------- parse


def _parse_part(obj: Any) -> Part | None:
    """The canonical part for a wire part, key order not checked (callers
    re-render and compare); ``None`` when no canonical part fits."""
    if not isinstance(obj, dict):
        return None
    if "functionCall" in obj and isinstance(obj["functionCall"], dict):
        fc = obj["functionCall"]
        name = fc.get("name")
        return ToolCall(id=fc.get("id"), name=name if isinstance(name, str) else "", arguments=fc.get("args"))  # type: ignore[arg-type]
    if "functionResponse" in obj and isinstance(obj["functionResponse"], dict):
        fr = obj["functionResponse"]
        return ToolResult(call_id=fr.get("id"), name=fr.get("name"), content=fr.get("response"))  # type: ignore[arg-type]
    if isinstance(obj.get("text"), str):
        if obj.get("thought") is True:
            sig = obj.get("thoughtSignature")
            return Reasoning(obj["text"], signature=sig if isinstance(sig, str) else None)
        return Text(obj["text"])
    for key in ("fileData", "inlineData"):
        data = obj.get(key)
        if isinstance(data, dict):
            mime = data.get("mime_type", data.get("mimeType"))
            mime = mime if isinstance(mime, str) else None
            uri = data.get("file_uri", data.get("fileUri"))
            if key == "fileData" and isinstance(uri, str):
                return Image(uri, media_type=mime)
            if key == "inlineData" and isinstance(data.get("data"), str):
                return Image(f"data:{mime};base64,{data['data']}", media_type=mime)
    return None


def _listed(value: Any) -> Any:
    """``value``, a lone object as a one-element list: the API reads a lone
    ``contents`` or ``parts`` object where its reference says a list (the
    bodies of sublayerapp/sublayer spec/vcr_cassettes/gemini/*.yml send
    ``"contents": {"role": ..., "parts": {"text": ...}}`` and are answered,
    with usage)."""
    return [value] if isinstance(value, dict) else value


def _parse_content(obj: Any, where: str) -> Message:
    if not isinstance(obj, dict):
        raise InputError(f"expected a content object, got {type(obj).__name__}", pointer=where)
    raw_parts = _listed(obj.get("parts"))
    raw_parts = raw_parts if isinstance(raw_parts, list) else []
    parsed = [_parse_part(p) for p in raw_parts]
    parts = tuple(p for p in parsed if p is not None)
    wire_role = obj.get("role")
    role = {"model": "assistant"}.get(wire_role, wire_role) if isinstance(wire_role, str) else "user"
    candidate = Message(role=role, parts=parts)
    if isinstance(wire_role, str) and wire_role not in ("assistant", "tool", "system", "developer"):
        if _same(_render_content(candidate), obj):
            return candidate
    return Message(role=role, parts=parts, extra=freeze(obj))


def _parse_system(value: Any) -> tuple[tuple[SystemBlock, ...], bool]:
    """System blocks, and whether the wire value is in canonical form."""
    parts = value.get("parts") if isinstance(value, dict) else None
    if not isinstance(parts, list):
        return (), False
    blocks = tuple(SystemBlock(p["text"]) for p in parts if isinstance(p, dict) and isinstance(p.get("text"), str))
    canonical = {"parts": [{"text": b.text} for b in blocks], "role": "user"}
    return blocks, _same(canonical, value)


def _parse_tools(value: Any) -> tuple[tuple[Tool, ...], bool]:
    """Function declarations as tools, and whether ``value`` is exactly the
    canonical single ``functionDeclarations`` entry."""
    tools: list[Tool] = []
    if not isinstance(value, list):
        return (), False
    for entry in value:
        decls = entry.get("functionDeclarations") if isinstance(entry, dict) else None
        for decl in decls if isinstance(decls, list) else ():
            if not isinstance(decl, dict):
                continue
            name, desc, params = decl.get("name"), decl.get("description"), decl.get("parameters")
            tools.append(Tool(
                name=name if isinstance(name, str) else "",
                description=desc if isinstance(desc, str) else None,
                parameters=freeze(params) if isinstance(params, dict) else None,
                extra=freeze({k: v for k, v in decl.items() if k not in ("name", "description", "parameters")}),
            ))
    if not tools:
        return (), False
    try:
        canonical = [{"functionDeclarations": [_render_decl(t) for t in tools]}]
    except InputError:
        return tuple(tools), False
    return tuple(tools), _same(canonical, value)


def parse_body(obj: Any, *, model: str = "", path: str | None = None) -> Request:
    """The canonical request for an already parsed body (``model`` comes
    from the request URL; the body does not carry it)."""
    try:
        if not isinstance(obj, dict):
            raise InputError(f"expected a JSON object, got {type(obj).__name__}", pointer="")
        contents = _listed(obj.get("contents"))
        if not isinstance(contents, list):
            raise InputError("expected a \"contents\" array", pointer="/contents")
        messages = tuple(_parse_content(c, f"/contents/{i}") for i, c in enumerate(contents))
        params: dict[str, Any] = {}
        system: tuple[SystemBlock, ...] = ()
        tools: tuple[Tool, ...] = ()
        for key, value in obj.items():
            if key == "contents":
                continue
            if key == "systemInstruction":
                system, canonical = _parse_system(value)
                if canonical:
                    continue
            elif key == "tools":
                tools, canonical = _parse_tools(value)
                if canonical:
                    continue
            params[key] = value
        return Request(Route("gemini", model), system=system, tools=tools, messages=messages, params=freeze(params))
    except InputError as exc:
        raise (exc.at(path) if path else exc) from None


# -------------------------------------------------------------- cache view


def _params_segment(body: bytes) -> Segment:
    found: list[bytes] = []
    for where, key in CACHE_MEMBERS:
        for m in member_spans(body, where):
            if m.key == key:
                found.append(body[m.start : m.end])
    return Segment("params", 0, "", b", ".join(found))


@dataclass(frozen=True)
class Gemini:
    """The ``gemini`` dialect (see the module docstring)."""

    name: str = "gemini"
    provider: str = "gemini"
    priority: int = 0

    def render(self, request: Request) -> bytes:
        """Byte-identical to ``genai.Client().models.generate_content(...)``."""
        layout = request.layout
        sdk = layout is None or getattr(layout, "name", None) == "google-genai"
        return write_request(request, render_body(request, sdk=sdk), self.name)

    def parse(self, body: bytes, *, model: str = "") -> Request:
        """The request, remembering how ``body`` was written (:mod:`.layout`)."""
        obj = loads(body)
        return attach(parse_body(obj, model=model), body, obj, self.name)

    def cache_view(self, body: bytes) -> list[Segment]:
        """params, system instruction parts, tools, contents."""
        body = bytes(body)
        obj = loads(body)
        if not isinstance(obj, dict):
            raise InputError(f"expected a JSON object, got {type(obj).__name__}", pointer="")
        segments = [_params_segment(body)]
        for i, (s, e) in enumerate(element_spans(body, "/systemInstruction/parts")):
            segments.append(Segment("system", i, pointer("systemInstruction", "parts", i), body[s:e]))
        n = 0
        tools = obj.get("tools")
        tools = tools if isinstance(tools, list) else []
        for t, (ts, te) in enumerate(element_spans(body, "/tools")):
            entry = tools[t] if t < len(tools) else None
            if isinstance(entry, dict) and isinstance(entry.get("functionDeclarations"), list):
                for d, (s, e) in enumerate(element_spans(body, pointer("tools", t, "functionDeclarations"))):
                    segments.append(Segment("tools", n, pointer("tools", t, "functionDeclarations", d), body[s:e]))
                    n += 1
            else:
                segments.append(Segment("tools", n, pointer("tools", t), body[ts:te]))
                n += 1
        if isinstance(obj.get("contents"), dict):  # a lone content (_listed)
            s, e = value_spans(body, ["/contents"])["/contents"]
            segments.append(Segment("message", 0, "/contents", body[s:e]))
        for i, (s, e) in enumerate(element_spans(body, "/contents")):
            segments.append(Segment("message", i, pointer("contents", i), body[s:e]))
        return segments

    def detect(self, obj: Any) -> bool:
        """A Gemini body: ``contents`` (an array, or a lone object) and no ``messages``."""
        return isinstance(obj, dict) and isinstance(obj.get("contents"), (list, dict)) and "messages" not in obj


GEMINI = register(Gemini())
