"""OpenAI Responses API (``POST /v1/responses``).

Wire bytes: the openai SDK's ``client.responses.create(...)`` body, serialised
as in :mod:`._json`, top-level keys in ``RESPONSES_KEYS`` order (see
:mod:`._openai_common`). Mapping (API reference,
https://platform.openai.com/docs/api-reference/responses/create):

* ``instructions`` (string) <-> ``Request.system`` (one block; several blocks
  are joined with a blank line).
* ``input`` as a string stays in ``Request.params["input"]`` (exact round
  trip); ``input`` as a list maps item by item:
  ``{"role", "content"}`` messages (content a string, or ``input_text`` /
  ``input_image`` parts), ``{"type": "function_call", "call_id", "name",
  "arguments"}`` -> assistant :class:`ToolCall`,
  ``{"type": "function_call_output", "call_id", "output"}`` -> ``tool``
  message with a :class:`ToolResult`.
* tools are flat: ``{"type": "function", "name", "description"?,
  "parameters"?, ...extra}``.

Any item or tool in another layout is kept verbatim: its whole wire object
sits in ``Message.extra`` / ``Tool.extra`` (non-empty ``extra`` means
verbatim for this dialect) and is emitted unchanged.

Cache view: params, tools, system (``instructions``, then leading
system/developer input items), then the other input items. Same prompt
caching rules as Chat Completions
(https://platform.openai.com/docs/guides/prompt-caching). Cache-key
parameters: ``model``, ``prompt_cache_key``, ``reasoning`` (effort is rendered
into the system header; assumed), ``text`` (``format`` json schema and
``verbosity``), ``tool_choice``, ``parallel_tool_calls``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ..errors import InputError
from ..jsonbytes import loads
from ..model import EMPTY, Image, Message, Request, Route, SystemBlock, Text, Tool, ToolCall, ToolResult, freeze
from . import Segment, register
from ._openai_common import (
    RESPONSES_KEYS,
    arguments_string,
    params_segment,
    parse_arguments,
    require_object,
    result_content,
    same_json,
    sdk_ordered,
)
from .profiles import attach, write_request
from .spans import parsed, top_elements, top_value


def _render_part(part: Any) -> dict[str, Any]:
    if isinstance(part, Text):
        return {"type": "input_text", "text": part.text}
    if isinstance(part, Image):
        out: dict[str, Any] = {"type": "input_image", "image_url": part.url}
        if part.detail is not None:
            out["detail"] = part.detail
        return out
    raise InputError(f"a {type(part).__name__} part cannot go in Responses message content")


def render_items(message: Message) -> list[dict[str, Any]]:
    """The ``input`` items of one message in fidelity's canonical layout (or
    verbatim): its text/image parts as one ``{"role", "content"}`` item, then
    one ``function_call`` / ``function_call_output`` item per tool call /
    result. ``Reasoning`` parts have no Responses input form without their
    item id and are left out."""
    if message.extra:
        return [dict(message.extra)]
    items: list[dict[str, Any]] = []
    content = [p for p in message.parts if isinstance(p, (Text, Image))]
    if content:
        if len(content) == 1 and isinstance(content[0], Text) and content[0].cache_control is None:
            items.append({"role": message.role, "content": content[0].text})
        else:
            items.append({"role": message.role, "content": [_render_part(p) for p in content]})
    for p in message.parts:
        if isinstance(p, ToolCall):
            items.append({"type": "function_call", "call_id": p.id, "name": p.name, "arguments": arguments_string(p)})
        elif isinstance(p, ToolResult):
            output = result_content(p.content, _render_part)
            items.append({"type": "function_call_output", "call_id": p.call_id, "output": output})
    return items


def render_item(message: Message) -> dict[str, Any]:
    """The single ``input`` item of a parsed message."""
    items = render_items(message)
    if len(items) != 1:
        raise InputError(f"message renders as {len(items)} Responses items, expected one")
    return items[0]


def parse_item(obj: Any, where: str) -> Message:
    obj = require_object(obj, where)
    kind = obj.get("type")
    message: Message | None = None
    if kind == "function_call" and isinstance(obj.get("arguments"), str):
        message = Message("assistant", (ToolCall(id=str(obj.get("call_id", "")), name=str(obj.get("name", "")),
                                                 arguments=parse_arguments(obj["arguments"]), arguments_json=obj["arguments"]),))
    elif kind == "function_call_output" and isinstance(obj.get("output"), str):
        message = Message("tool", (ToolResult(call_id=str(obj.get("call_id", "")), content=obj["output"]),))
    elif isinstance(obj.get("role"), str):
        content = obj.get("content")
        parts: list[Any] = []
        if isinstance(content, str):
            parts.append(Text(content))
        elif isinstance(content, list):
            for p in content:
                if isinstance(p, dict) and p.get("type") in ("input_text", "output_text") and isinstance(p.get("text"), str):
                    parts.append(Text(p["text"]))
                elif isinstance(p, dict) and p.get("type") == "input_image" and isinstance(p.get("image_url"), str):
                    parts.append(Image(p["image_url"], detail=p.get("detail") if isinstance(p.get("detail"), str) else None))
        message = Message(obj["role"], tuple(parts))
    if message is not None:
        try:
            if same_json(render_item(message), obj):
                return message
        except InputError:
            pass
    role = obj.get("role") if isinstance(obj.get("role"), str) else ("tool" if str(kind).endswith("_output") else "assistant")
    return Message(role, message.parts if message else (), extra=freeze(obj))


def _turns(messages: list[Message], items: list[Any]) -> tuple[Message, ...]:
    """One assistant turn is one message: an assistant item and the
    ``function_call`` items after it (or calls alone) are merged when the
    merged message renders back to exactly those items, so a turn forks and
    scores as it does from any other dialect."""
    out: list[Message] = []
    spans: list[tuple[int, int]] = []
    for i, m in enumerate(messages):
        prev = out[-1] if out else None
        if (prev is not None and m.role == "assistant" and prev.role == "assistant" and not m.extra
                and not prev.extra and all(isinstance(p, ToolCall) for p in m.parts)):
            start = spans[-1][0]
            merged = Message("assistant", prev.parts + m.parts)
            got = render_items(merged)
            if len(got) == i + 1 - start and all(same_json(g, o) for g, o in zip(got, items[start:i + 1])):
                out[-1], spans[-1] = merged, (start, i + 1)
                continue
        out.append(m)
        spans.append((i, i + 1))
    return tuple(out)


def render_tool(tool: Tool) -> dict[str, Any]:
    if "type" in tool.extra:
        return dict(tool.extra)
    out: dict[str, Any] = {"type": "function", "name": tool.name}
    if tool.description is not None:
        out["description"] = tool.description
    if tool.parameters is not None:
        out["parameters"] = tool.parameters
    out.update(tool.extra)
    return out


def parse_tool(obj: Any, where: str) -> Tool:
    obj = require_object(obj, where)
    if obj.get("type") == "function" and isinstance(obj.get("name"), str):
        desc, params = obj.get("description"), obj.get("parameters")
        tool = Tool(obj["name"], desc if isinstance(desc, str) else None, freeze(params) if isinstance(params, dict) else None,
                    extra=freeze({k: v for k, v in obj.items() if k not in ("type", "name", "description", "parameters")}))
        if same_json(render_tool(tool), obj):
            return tool
    return Tool(str(obj.get("name", obj.get("type", ""))), extra=freeze(obj))


@dataclass(frozen=True)
class ResponsesDialect:
    name: str = "openai-responses"
    provider: str = "openai"
    priority: int = 1
    cache_keys: tuple[str, ...] = ("model", "prompt_cache_key", "reasoning", "text", "tool_choice", "parallel_tool_calls")

    def body(self, request: Request) -> dict[str, Any]:
        fields: dict[str, Any] = dict(request.params)
        if "model" in fields:
            raise InputError("params must not hold 'model'; it comes from the request route")
        fields["model"] = request.route.model
        if request.messages:
            if "input" in fields:
                raise InputError("params['input'] and messages are both set; use one")
            fields["input"] = [item for m in request.messages for item in render_items(m)]
        if request.system:
            fields["instructions"] = request.system_text("\n\n")
        if request.tools:
            fields["tools"] = [render_tool(t) for t in request.tools]
        return sdk_ordered(fields, RESPONSES_KEYS)

    def render(self, request: Request) -> bytes:
        """The body in the request's layout (parsed bytes or client profile), else the current SDK's."""
        return write_request(request, self.body(request), self.name)

    def parse(self, body: bytes, *, path: str | None = None, model: str = "") -> Request:
        """The request, remembering how ``body`` was written (:mod:`.layout`);
        ``model`` for a body that leaves it to the URL (Azure deployments)."""
        obj = require_object(loads(body, path=path), "", path)
        found = obj.get("model") if "model" in obj or not model else model
        if not isinstance(found, str):
            raise InputError("body has no string \"model\"", path=path, pointer="/model")
        model = found
        items = obj.get("input")
        messages: tuple[Message, ...] = ()
        if isinstance(items, list) and items:
            messages = _turns([parse_item(m, f"/input/{i}") for i, m in enumerate(items)], items)
        system: tuple[SystemBlock, ...] = ()
        if isinstance(obj.get("instructions"), str):
            system = (SystemBlock(obj["instructions"]),)
        tools: tuple[Tool, ...] = ()
        if isinstance(obj.get("tools"), list) and obj["tools"]:
            tools = tuple(parse_tool(t, f"/tools/{i}") for i, t in enumerate(obj["tools"]))
        skip = {"model"} | ({"input"} if messages else set()) | ({"instructions"} if system else set()) | ({"tools"} if tools else set())
        params = {k: v for k, v in obj.items() if k not in skip}
        return attach(Request(Route(self.provider, model), system, tools, messages, freeze(params) if params else EMPTY),
                      body, obj, self.name, url_keys=("model",))

    def cache_view(self, body: bytes) -> list[Segment]:
        obj = require_object(parsed(body), "")
        out = [params_segment(body, self.cache_keys)]
        for i, (s, e) in enumerate(top_elements(body, "tools")):
            out.append(Segment("tools", i, f"/tools/{i}", body[s:e]))
        system: list[Segment] = []
        if "instructions" in obj:
            s, e = top_value(body, "instructions")  # type: ignore[misc]
            system.append(Segment("system", 0, "/instructions", body[s:e]))
        rest: list[Segment] = []
        items = obj.get("input")
        if isinstance(items, list):
            leading = True
            for i, (s, e) in enumerate(top_elements(body, "input")):
                item = items[i]
                if leading and isinstance(item, dict) and item.get("role") in ("system", "developer"):
                    system.append(Segment("system", len(system), f"/input/{i}", body[s:e]))
                else:
                    leading = False
                    rest.append(Segment("message", len(rest), f"/input/{i}", body[s:e]))
        elif "input" in obj:
            s, e = top_value(body, "input")  # type: ignore[misc]
            rest.append(Segment("message", 0, "/input", body[s:e]))
        return out + system + rest

    def detect(self, obj: Any) -> bool:
        return isinstance(obj, dict) and isinstance(obj.get("model"), str) and "input" in obj and "messages" not in obj


OPENAI_RESPONSES = register(ResponsesDialect())

__all__ = ["ResponsesDialect", "OPENAI_RESPONSES", "render_items", "render_item", "parse_item"]
