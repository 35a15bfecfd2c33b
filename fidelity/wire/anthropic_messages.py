"""Anthropic Messages API (``POST /v1/messages``): the bytes the official
``anthropic`` Python SDK sends for ``client.messages.create(...)`` and the
order in which Anthropic's prompt cache reads them.

``render`` reproduces the SDK's serialiser and top-level key order (anthropic
2.14.0: ``anthropic/_utils/_json.py``, ``Messages.create`` in
``anthropic/resources/messages/messages.py``) with nested objects in the
Messages API reference's order (https://docs.claude.com/en/api/messages);
``parse`` keeps any object that would not re-render verbatim in ``extra``,
so ``render(parse(b)) == b``. The cache view is params (:data:`CACHE_KEYS`),
tools, system, messages: the prefix hierarchy of
https://platform.claude.com/docs/en/agents-and-tools/tool-use/tool-use-with-prompt-caching
and the "What invalidates the cache" table of
https://platform.claude.com/docs/en/build-with-claude/prompt-caching.
Details and sources: docs/wire-anthropic-gemini.md.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from ..errors import InputError
from ..jsonbytes import dumps_compact, loads
from ..model import (
    EMPTY,
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
from ._openai_common import array_segments, params_segment, same_json, sdk_ordered
from .profiles import attach, write_request
from .spans import parsed, top_value

__all__ = ["AnthropicMessages", "ANTHROPIC_MESSAGES", "SDK_KEYS", "CACHE_KEYS", "ANTHROPIC_API_HOSTS",
           "BILLING_PREFIX", "billing_block_keyed", "is_billing_block"]

#: ``Messages.create`` body literal order (anthropic 2.14.0,
#: anthropic/resources/messages/messages.py).
SDK_KEYS: tuple[str, ...] = (
    "max_tokens", "messages", "model", "cache_control", "container", "diagnostics",
    "inference_geo", "metadata", "output_config", "service_tier", "speed",
    "stop_sequences", "stream", "system", "thinking", "tool_choice", "tools",
)

#: Top-level members gathered in the params segment (docs/wire-anthropic-gemini.md, "Cache view").
CACHE_KEYS: tuple[str, ...] = ("model", "cache_control", "thinking", "output_config", "output_format", "speed",
                               "tool_choice")

_DATA_URL = re.compile(r"data:([^;,]+);base64,(.*)\Z", re.DOTALL)


# ------------------------------------------------------------------ render


def _render_block(part: Part) -> dict[str, Any]:
    if isinstance(part, Text):
        return _with_cache_control({"type": "text", "text": part.text}, part.cache_control)
    if isinstance(part, Image):
        m = _DATA_URL.match(part.url)
        if m:
            source = {"type": "base64", "media_type": m.group(1), "data": m.group(2)}
        else:
            source = {"type": "url", "url": part.url}
        return _with_cache_control({"type": "image", "source": source}, part.cache_control)
    if isinstance(part, ToolCall):
        out: dict[str, Any] = {"type": "tool_use", "id": part.id, "name": part.name, "input": thaw(part.arguments)}
        return _with_cache_control(out, part.cache_control)
    if isinstance(part, ToolResult):
        out = {"type": "tool_result", "tool_use_id": part.call_id, "content": _render_result_content(part.content)}
        if part.is_error:
            out["is_error"] = True
        return _with_cache_control(out, part.cache_control)
    if isinstance(part, Reasoning):
        out = {"type": "thinking", "thinking": part.text}
        if part.signature is not None:
            out["signature"] = part.signature
        return out
    raise InputError(f"anthropic-messages cannot render a {type(part).__name__} part")


def _with_cache_control(block: dict[str, Any], cache_control: Any) -> dict[str, Any]:
    if cache_control is not None:
        block["cache_control"] = thaw(cache_control)
    return block


def _render_result_content(content: Any) -> Any:
    if isinstance(content, str):
        return content
    if isinstance(content, tuple) and all(isinstance(p, (Text, Image)) for p in content):
        return [_render_block(p) for p in content]
    # A tool result from another dialect (a Gemini ``response`` object):
    # Anthropic takes text, so send its JSON text.
    return dumps_compact(content).decode("utf-8")


def _render_message(message: Message) -> dict[str, Any]:
    if "role" in message.extra:
        return thaw(message.extra)  # verbatim
    role = message.role
    if role == "tool":  # an OpenAI-style tool message: Anthropic carries results in user turns
        role = "user"
    elif role not in ("user", "assistant"):
        raise InputError(f"anthropic-messages has no {role!r} messages; put system text in Request.system")
    parts = message.parts
    if len(parts) == 1 and isinstance(parts[0], Text) and parts[0].cache_control is None:
        content: Any = parts[0].text
    else:
        content = [_render_block(p) for p in parts]
    out = {"role": role, "content": content}
    out.update(thaw(message.extra))
    return out


def _render_tool(tool: Tool) -> dict[str, Any]:
    # the schema and extra values go as the frozen values they are (as in
    # _openai_common.render_tool): every layout writes a FrozenDict and a
    # tuple as a dict and a list, and nothing changes a rendered tool's schema
    if "name" in tool.extra:
        return dict(tool.extra)  # verbatim
    out: dict[str, Any] = {"name": tool.name}
    if tool.description is not None:
        out["description"] = tool.description
    if tool.parameters is not None:
        out["input_schema"] = tool.parameters
    out.update(tool.extra)
    return out


def _render_system_block(block: SystemBlock) -> dict[str, Any]:
    if "type" in block.extra:
        return thaw(block.extra)  # verbatim
    out = _with_cache_control({"type": "text", "text": block.text}, block.cache_control)
    out.update(thaw(block.extra))
    return out


def _render_system(blocks: Sequence[SystemBlock]) -> Any:
    if len(blocks) == 1 and blocks[0].cache_control is None and not blocks[0].extra:
        return blocks[0].text
    return [_render_system_block(b) for b in blocks]


def render_body(request: Request) -> dict[str, Any]:
    """The body as a plain ordered dict, before serialisation."""
    fields: dict[str, Any] = {}
    for key, value in request.params.items():
        if key in ("messages", "model"):
            raise InputError(f"Request.params must not hold {key!r}; it is part of the Request itself")
        fields[key] = thaw(value)
    fields["messages"] = [_render_message(m) for m in request.messages]
    fields["model"] = request.route.model
    if request.system:
        fields["system"] = _render_system(request.system)
    if request.tools:
        fields["tools"] = [_render_tool(t) for t in request.tools]
    return sdk_ordered(fields, SDK_KEYS)


# ------------------------------------------------------------------- parse


def _obj(value: Any, where: str) -> Mapping[str, Any]:
    if not isinstance(value, dict):
        raise InputError(f"expected an object, got {type(value).__name__}", pointer=where)
    return value


def _str(value: Any, where: str) -> str:
    if not isinstance(value, str):
        raise InputError(f"expected a string, got {type(value).__name__}", pointer=where)
    return value


def _parse_block(obj: Any, where: str, names: Mapping[str, str]) -> Part | None:
    """The part a content block stands for (``None`` for block types the
    canonical model has no part for: documents, redacted thinking, server
    tool blocks...). Key order is not checked here; callers re-render."""
    block = _obj(obj, where)
    kind = block.get("type")
    if kind == "text":
        return Text(_str(block.get("text"), where + "/text"), cache_control=block.get("cache_control"))
    cache_control = block.get("cache_control")
    # another shape than an object: the block re-renders differently and is kept verbatim
    cache_control = freeze(cache_control) if isinstance(cache_control, dict) else None
    if kind == "image":
        source = block.get("source")
        if isinstance(source, dict):
            if source.get("type") == "url" and isinstance(source.get("url"), str):
                return Image(source["url"], cache_control=cache_control)
            if source.get("type") == "base64" and isinstance(source.get("data"), str):
                mt = source.get("media_type")
                return Image(f"data:{mt};base64,{source['data']}", media_type=mt if isinstance(mt, str) else None,
                             cache_control=cache_control)
        return None
    if kind == "tool_use":
        return ToolCall(
            id=_str(block.get("id"), where + "/id"),
            name=_str(block.get("name"), where + "/name"),
            arguments=block.get("input", EMPTY),
            cache_control=cache_control,
        )
    if kind == "tool_result":
        call_id = _str(block.get("tool_use_id"), where + "/tool_use_id")
        content = block.get("content", "")
        if isinstance(content, list):
            content = tuple(
                p for i, c in enumerate(content)
                if (p := _parse_block(c, f"{where}/content/{i}", names)) is not None
            )
        return ToolResult(call_id, name=names.get(call_id), content=content, is_error=block.get("is_error") is True,
                          cache_control=cache_control)
    if kind == "thinking":
        sig = block.get("signature")
        return Reasoning(_str(block.get("thinking"), where + "/thinking"), signature=sig if isinstance(sig, str) else None)
    return None


def _parse_message(obj: Any, where: str, names: dict[str, str]) -> Message:
    msg = _obj(obj, where)
    role = _str(msg.get("role"), where + "/role")
    content = msg.get("content")
    if isinstance(content, str):
        parts: tuple[Part, ...] = (Text(content),)
    elif isinstance(content, list):
        parsed = [_parse_block(c, f"{where}/content/{i}", names) for i, c in enumerate(content)]
        parts = tuple(p for p in parsed if p is not None)
        for p in parts:
            if isinstance(p, ToolCall):
                names[p.id] = p.name
    else:  # null or another shape: kept verbatim below
        parts = ()
    extra = freeze({k: v for k, v in msg.items() if k not in ("role", "content")})
    candidate = Message(role=role, parts=parts, extra=extra)
    if "role" not in extra and "content" in msg and list(msg)[:2] == ["role", "content"]:
        try:
            if same_json(_render_message(candidate), msg):
                return candidate
        except InputError:
            pass
    return Message(role=role, parts=parts, extra=freeze(msg))


def _parse_tool(obj: Any, where: str) -> Tool:
    tool = _obj(obj, where)
    name = tool.get("name")
    desc = tool.get("description")
    params = tool.get("input_schema")
    candidate = Tool(
        name=name if isinstance(name, str) else "",
        description=desc if isinstance(desc, str) else None,
        parameters=freeze(params) if isinstance(params, dict) else None,
        extra=freeze({k: v for k, v in tool.items() if k not in ("name", "description", "input_schema")}),
    )
    if isinstance(name, str) and "name" not in candidate.extra and same_json(_render_tool(candidate), tool):
        return candidate
    return Tool(candidate.name, candidate.description, candidate.parameters, extra=freeze(tool))


def _parse_system(value: Any) -> tuple[SystemBlock, ...]:
    if isinstance(value, str):
        return (SystemBlock(value),)
    if not isinstance(value, list):
        raise InputError("system must be a string or a list of text blocks", pointer="/system")
    blocks = []
    for i, raw in enumerate(value):
        block = _obj(raw, f"/system/{i}")
        text = block.get("text")
        candidate = SystemBlock(
            text if isinstance(text, str) else "",
            cache_control=block.get("cache_control"),
            extra=freeze({k: v for k, v in block.items() if k not in ("type", "text", "cache_control")}),
        )
        ok = isinstance(text, str) and "type" not in candidate.extra and same_json(_render_system_block(candidate), block)
        blocks.append(candidate if ok else SystemBlock(candidate.text, extra=freeze(block)))
    # One plain block would render as a string: keep the list form verbatim.
    if len(blocks) == 1 and blocks[0].cache_control is None and not blocks[0].extra:
        blocks[0] = SystemBlock(blocks[0].text, extra=freeze(value[0]))
    return tuple(blocks)


def parse_body(obj: Any, path: str | None = None, *, model: str = "") -> Request:
    """The canonical request for an already parsed body. A body without
    ``model`` (Claude on Bedrock or Vertex AI: ``anthropic_version`` in the
    body, the model in the URL) takes ``model``, which the caller read from
    the URL."""
    try:
        body = _obj(obj, "")
        if "model" in body or "anthropic_version" not in body:
            model = _str(body.get("model"), "/model")
        messages = body.get("messages")
        if not isinstance(messages, list):
            raise InputError("expected a \"messages\" array", pointer="/messages")
        names: dict[str, str] = {}
        parsed = tuple(_parse_message(m, f"/messages/{i}", names) for i, m in enumerate(messages))
        params: dict[str, Any] = {}
        system: tuple[SystemBlock, ...] = ()
        tools: tuple[Tool, ...] = ()
        for key, value in body.items():
            if key in ("messages", "model"):
                continue
            if key == "system" and (isinstance(value, str) or (isinstance(value, list) and value)):
                system = _parse_system(value)
            elif key == "tools" and isinstance(value, list) and value:
                tools = tuple(_parse_tool(t, f"/tools/{i}") for i, t in enumerate(value))
            else:
                params[key] = value
        return Request(Route("anthropic", model), system=system, tools=tools, messages=parsed, params=freeze(params))
    except InputError as exc:
        raise (exc.at(path) if path else exc) from None


# -------------------------------------------------------------- cache view


#: hosts of Anthropic's own Messages API (first party)
ANTHROPIC_API_HOSTS: tuple[str, ...] = ("api.anthropic.com",)
#: how Claude Code's attribution block starts
BILLING_PREFIX = "x-anthropic-billing-header:"


def billing_block_keyed(endpoint: str | None) -> bool:
    """Does the cache at ``endpoint`` (a URL; ``None``: a bare body, taken as
    Anthropic's own API) key on Claude Code's billing block (``system[0]``,
    ``x-anthropic-billing-header: ...``)? Not at Anthropic's own API (the
    block is left out of the cache view:
    https://github.com/anthropics/claude-code/issues/44724); yes at any
    other Anthropic-compatible endpoint, where it is prompt text
    (anthropics/claude-code issue 68900, sgl-project/sglang PR 21064,
    waybarrios/vllm-mlx PR 277, ggml-org/llama.cpp PR 20623, ollama/ollama
    PR 14918). The evidence: docs/proxy.md.
    """
    if endpoint is None:
        return False
    from urllib.parse import urlsplit

    host = (urlsplit(endpoint).hostname or "").lower()
    return not any(host == h or host.endswith("." + h) for h in ANTHROPIC_API_HOSTS)


def is_billing_block(block: Any) -> bool:
    """Is ``block`` (a parsed ``system`` block) Claude Code's billing block?"""
    return (isinstance(block, dict) and block.get("type") == "text" and isinstance(block.get("text"), str)
            and block["text"].startswith(BILLING_PREFIX))


@dataclass(frozen=True)
class AnthropicMessages:
    """The ``anthropic-messages`` dialect (see the module docstring)."""

    name: str = "anthropic-messages"
    provider: str = "anthropic"
    #: above openai-chat (0): an Anthropic body is also "model + messages"
    priority: int = 5

    def render(self, request: Request) -> bytes:
        """Byte-identical to ``anthropic.Anthropic().messages.create(...)``."""
        return write_request(request, render_body(request), self.name)

    def parse(self, body: bytes, *, model: str = "") -> Request:
        """The request, remembering how ``body`` was written (:mod:`.layout`);
        ``model`` for a body that leaves it to the URL (Bedrock, Vertex AI)."""
        obj = loads(body)
        return attach(parse_body(obj, model=model), body, obj, self.name, url_keys=("model",))

    #: the cache view depends on where the body goes (see :func:`billing_block_keyed`)
    endpoint_aware: bool = True

    def cache_view(self, body: bytes, *, endpoint: str | None = None) -> list[Segment]:
        """params, tools, system, messages: Anthropic's prefix hierarchy.

        ``endpoint``: the URL the body goes to (``None``: Anthropic's own
        API). On Anthropic's API, Claude Code's billing block is not part of
        what the cache keys on and is left out; on any other endpoint it is
        prompt text like the rest (:func:`billing_block_keyed`)."""
        obj = _obj(parsed(body), "")
        body = bytes(body)
        segments = [params_segment(body, CACHE_KEYS)]
        segments += array_segments(body, "tools", "tools", 0) if isinstance(obj.get("tools"), list) else []
        system = obj.get("system")
        if isinstance(system, list):
            blocks = array_segments(body, "system", "system", 0)
            if not billing_block_keyed(endpoint):
                blocks = [b for i, b in enumerate(blocks) if not is_billing_block(system[i] if i < len(system) else None)]
            segments += blocks
        elif system is not None:
            s, e = top_value(body, "system")  # type: ignore[misc]
            segments.append(Segment("system", 0, "/system", body[s:e]))
        segments += array_segments(body, "messages", "message", 0) if isinstance(obj.get("messages"), list) else []
        return segments

    def detect(self, obj: Any) -> bool:
        """An Anthropic body: ``model`` + ``messages`` and a mark that only
        Anthropic bodies carry -- the SDK's leading ``max_tokens, messages,
        model`` key order, a top-level ``system``, an ``input_schema`` tool,
        or a typed Anthropic content block."""
        if not (isinstance(obj, dict) and isinstance(obj.get("messages"), list)):
            return False
        if "anthropic_version" in obj:  # Bedrock / Vertex AI: the model is in the URL
            return True
        if not isinstance(obj.get("model"), str):
            return False
        if list(obj)[:3] == ["max_tokens", "messages", "model"] or "system" in obj:
            return True
        tools = obj.get("tools")
        if isinstance(tools, list) and any(isinstance(t, dict) and "input_schema" in t for t in tools):
            return True
        marks = {"tool_use", "tool_result", "thinking", "redacted_thinking", "document", "image", "server_tool_use",
                 "web_search_tool_result"}
        for m in obj["messages"]:
            content = m.get("content") if isinstance(m, dict) else None
            if isinstance(content, list) and any(isinstance(b, dict) and isinstance(b.get("type"), str) and b["type"] in marks for b in content):
                return True
        return False


ANTHROPIC_MESSAGES = register(AnthropicMessages())
