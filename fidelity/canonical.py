"""The canonical request JSON format: a provider-neutral :class:`Request` on disk.

``fidelity render --provider P REQUEST.json`` reads it; fixtures and tests
write it. One JSON object::

    {
      "fidelity": "request/1",
      "route": {"provider": "openai", "model": "gpt-5"},
      "system": [{"text": "...", "name": "base"?, "cache_control": {...}?, "extra": {...}?}],
      "tools": [{"name": "...", "description": "..."?, "parameters": {...}?, "extra": {...}?}],
      "messages": [{"role": "user", "parts": [PART, ...], "extra": {...}?}],
      "params": {...}
    }

``PART`` is one of (``type`` first, optional keys omitted when default)::

    {"type": "text", "text": "...", "cache_control": {...}?}
    {"type": "reasoning", "text": "...", "signature": "..."?}
    {"type": "tool_call", "id": "...", "name": "...", "arguments": {...}, "arguments_json": "..."?, "cache_control": {...}?}
    {"type": "tool_result", "call_id": "...", "name": "..."?, "content": "..." | [PART, ...], "is_error": true?, "cache_control": {...}?}
    {"type": "tool_result", "call_id": "...", "content_json": ANY}      (non-text result, e.g. Gemini's response object)
    {"type": "image", "url": "...", "detail": "..."?, "media_type": "..."?, "cache_control": {...}?}

``cache_control`` is a breakpoint marker (Anthropic on every block;
DashScope on text parts); dialects without per-part breakpoints ignore it.

Rules: key order inside ``parameters``, ``arguments``, ``params`` and every
``extra`` is kept exactly (it is cache-relevant); nothing is sorted. Keys
``system``, ``tools``, ``messages`` and ``params`` may be omitted when empty.
The writer uses two-space indentation and raw UTF-8 (a string holding a lone
surrogate makes the whole document fall back to ``\\uXXXX`` escapes).
Round trip: ``request_from_json(request_to_json(r)) == r`` for every request,
and ``request_to_json`` is a fixed point on its own output.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Mapping

from .errors import InputError
from .model import (
    EMPTY, Image, Message, Reasoning, Request, Route, SystemBlock, Text, Tool, ToolCall, ToolResult, freeze, thaw,
)
from .jsonbytes import loads

FORMAT = "request/1"

__all__ = ["FORMAT", "request_to_obj", "request_to_json", "request_from_obj", "request_from_json", "load_request"]


def _part_to_obj(part: Any) -> dict[str, Any]:
    if isinstance(part, Text):
        out: dict[str, Any] = {"type": "text", "text": part.text}
        if part.cache_control is not None:
            out["cache_control"] = thaw(part.cache_control)
    elif isinstance(part, Reasoning):
        out = {"type": "reasoning", "text": part.text}
        if part.signature is not None:
            out["signature"] = part.signature
    elif isinstance(part, ToolCall):
        # a Gemini functionCall may carry no id: leave the key out (the reader
        # refuses "id": null), so canonical JSON never writes what it cannot read
        out = {"type": "tool_call", "id": part.id, "name": part.name, "arguments": thaw(part.arguments)}
        if part.id is None:
            del out["id"]
        if part.arguments_json is not None:
            out["arguments_json"] = part.arguments_json
        if part.cache_control is not None:
            out["cache_control"] = thaw(part.cache_control)
    elif isinstance(part, ToolResult):
        out = {"type": "tool_result", "call_id": part.call_id}
        if part.call_id is None:
            del out["call_id"]
        if part.name is not None:
            out["name"] = part.name
        content = part.content
        if isinstance(content, str):
            out["content"] = content
        elif isinstance(content, tuple) and all(isinstance(p, (Text, Image)) for p in content):
            out["content"] = [_part_to_obj(p) for p in content]
        else:
            out["content_json"] = thaw(content)
        if part.is_error:
            out["is_error"] = True
        if part.cache_control is not None:
            out["cache_control"] = thaw(part.cache_control)
    elif isinstance(part, Image):
        out = {"type": "image", "url": part.url}
        if part.detail is not None:
            out["detail"] = part.detail
        if part.media_type is not None:
            out["media_type"] = part.media_type
        if part.cache_control is not None:
            out["cache_control"] = thaw(part.cache_control)
    else:
        raise InputError(f"unknown part type {type(part).__name__}")
    return out


def request_to_obj(request: Request) -> dict[str, Any]:
    """The canonical JSON object of ``request`` (plain dicts, key order kept)."""
    out: dict[str, Any] = {
        "fidelity": FORMAT,
        "route": {"provider": request.route.provider, "model": request.route.model},
    }
    if request.system:
        blocks = []
        for b in request.system:
            block: dict[str, Any] = {"text": b.text}
            if b.name is not None:
                block["name"] = b.name
            if b.cache_control is not None:
                block["cache_control"] = thaw(b.cache_control)
            if b.extra:
                block["extra"] = thaw(b.extra)
            blocks.append(block)
        out["system"] = blocks
    if request.tools:
        tools = []
        for t in request.tools:
            tool: dict[str, Any] = {"name": t.name}
            if t.description is not None:
                tool["description"] = t.description
            if t.parameters is not None:
                tool["parameters"] = thaw(t.parameters)
            if t.extra:
                tool["extra"] = thaw(t.extra)
            tools.append(tool)
        out["tools"] = tools
    if request.messages:
        messages = []
        for m in request.messages:
            msg: dict[str, Any] = {"role": m.role, "parts": [_part_to_obj(p) for p in m.parts]}
            if m.extra:
                msg["extra"] = thaw(m.extra)
            messages.append(msg)
        out["messages"] = messages
    if request.params:
        out["params"] = thaw(request.params)
    return out


def request_to_json(request: Request) -> bytes:
    """Canonical JSON bytes (indent 2, raw UTF-8, trailing newline)."""
    obj = request_to_obj(request)
    try:
        return (json.dumps(obj, ensure_ascii=False, indent=2) + "\n").encode("utf-8")
    except UnicodeEncodeError:  # a lone surrogate: escape everything non-ASCII
        return (json.dumps(obj, ensure_ascii=True, indent=2) + "\n").encode("ascii")


# ---------------------------------------------------------------- reading


class _Reader:
    """Field access that names the JSON pointer in every error."""

    def __init__(self, path: str | None) -> None:
        self.path = path

    def fail(self, problem: str, pointer: str) -> InputError:
        return InputError(problem, path=self.path, pointer=pointer)

    def obj(self, value: Any, pointer: str) -> Mapping[str, Any]:
        if not isinstance(value, dict):
            raise self.fail(f"expected an object, got {_kind(value)}", pointer)
        return value

    def lst(self, value: Any, pointer: str) -> list[Any]:
        if not isinstance(value, list):
            raise self.fail(f"expected an array, got {_kind(value)}", pointer)
        return value

    def string(self, obj: Mapping[str, Any], key: str, pointer: str, *, optional: bool = False) -> Any:
        if key not in obj:
            if optional:
                return None
            raise self.fail(f"missing {key!r}", pointer)
        value = obj[key]
        if not isinstance(value, str):
            raise self.fail(f"{key!r} must be a string, got {_kind(value)}", f"{pointer}/{key}")
        return value

    def mapping(self, obj: Mapping[str, Any], key: str, pointer: str) -> Any:
        if key not in obj:
            return None
        return freeze(self.obj(obj[key], f"{pointer}/{key}"))

    def check_keys(self, obj: Mapping[str, Any], allowed: tuple[str, ...], pointer: str) -> None:
        for key in obj:
            if key not in allowed:
                raise self.fail(f"unknown key {key!r} (allowed: {', '.join(allowed)})", pointer)


def _kind(value: Any) -> str:
    return {dict: "an object", list: "an array", str: "a string", bool: "a boolean", type(None): "null"}.get(
        type(value), "a number")


def _part_from_obj(r: _Reader, obj: Any, ptr: str, *, nested: bool = False) -> Any:
    obj = r.obj(obj, ptr)
    kind = r.string(obj, "type", ptr)
    if kind == "text":
        r.check_keys(obj, ("type", "text", "cache_control"), ptr)
        return Text(r.string(obj, "text", ptr), cache_control=r.mapping(obj, "cache_control", ptr))
    if kind == "image":
        r.check_keys(obj, ("type", "url", "detail", "media_type", "cache_control"), ptr)
        return Image(r.string(obj, "url", ptr), detail=r.string(obj, "detail", ptr, optional=True),
                     media_type=r.string(obj, "media_type", ptr, optional=True),
                     cache_control=r.mapping(obj, "cache_control", ptr))
    if nested:
        raise r.fail(f"a tool result holds text and image parts only, not {kind!r}", ptr)
    if kind == "reasoning":
        r.check_keys(obj, ("type", "text", "signature"), ptr)
        return Reasoning(r.string(obj, "text", ptr), signature=r.string(obj, "signature", ptr, optional=True))
    if kind == "tool_call":
        r.check_keys(obj, ("type", "id", "name", "arguments", "arguments_json", "cache_control"), ptr)
        return ToolCall(r.string(obj, "id", ptr, optional=True), r.string(obj, "name", ptr),
                        arguments=freeze(obj.get("arguments", {})),
                        arguments_json=r.string(obj, "arguments_json", ptr, optional=True),
                        cache_control=r.mapping(obj, "cache_control", ptr))
    if kind == "tool_result":
        r.check_keys(obj, ("type", "call_id", "name", "content", "content_json", "is_error", "cache_control"), ptr)
        if "content" in obj and "content_json" in obj:
            raise r.fail("give 'content' or 'content_json', not both", ptr)
        if "content_json" in obj:
            content: Any = freeze(obj["content_json"])
        else:
            raw = obj.get("content", "")
            if isinstance(raw, str):
                content = raw
            else:
                content = tuple(_part_from_obj(r, p, f"{ptr}/content/{i}", nested=True)
                                for i, p in enumerate(r.lst(raw, f"{ptr}/content")))
        is_error = obj.get("is_error", False)
        if not isinstance(is_error, bool):
            raise r.fail("'is_error' must be true or false", f"{ptr}/is_error")
        return ToolResult(r.string(obj, "call_id", ptr, optional=True), name=r.string(obj, "name", ptr, optional=True),
                          content=content, is_error=is_error, cache_control=r.mapping(obj, "cache_control", ptr))
    raise r.fail(f"unknown part type {kind!r} (known: text, reasoning, tool_call, tool_result, image)", ptr)


def request_from_obj(obj: Any, *, path: str | None = None) -> Request:
    """Build a :class:`Request` from a parsed canonical JSON object."""
    r = _Reader(path)
    obj = r.obj(obj, "")
    r.check_keys(obj, ("fidelity", "route", "system", "tools", "messages", "params"), "")
    if obj.get("fidelity", FORMAT) != FORMAT:
        raise r.fail(f"unsupported format {obj.get('fidelity')!r}; expected {FORMAT!r}", "/fidelity")
    route_obj = r.obj(obj.get("route"), "/route")
    route = Route(r.string(route_obj, "provider", "/route"), r.string(route_obj, "model", "/route"))
    system = []
    for i, b in enumerate(r.lst(obj.get("system", []), "/system")):
        ptr = f"/system/{i}"
        b = r.obj(b, ptr)
        r.check_keys(b, ("text", "name", "cache_control", "extra"), ptr)
        system.append(SystemBlock(r.string(b, "text", ptr), name=r.string(b, "name", ptr, optional=True),
                                  cache_control=r.mapping(b, "cache_control", ptr),
                                  extra=r.mapping(b, "extra", ptr) or EMPTY))
    tools = []
    for i, t in enumerate(r.lst(obj.get("tools", []), "/tools")):
        ptr = f"/tools/{i}"
        t = r.obj(t, ptr)
        r.check_keys(t, ("name", "description", "parameters", "extra"), ptr)
        tools.append(Tool(r.string(t, "name", ptr), description=r.string(t, "description", ptr, optional=True),
                          parameters=r.mapping(t, "parameters", ptr), extra=r.mapping(t, "extra", ptr) or EMPTY))
    messages = []
    for i, m in enumerate(r.lst(obj.get("messages", []), "/messages")):
        ptr = f"/messages/{i}"
        m = r.obj(m, ptr)
        r.check_keys(m, ("role", "parts", "extra"), ptr)
        parts = tuple(_part_from_obj(r, p, f"{ptr}/parts/{j}") for j, p in enumerate(r.lst(m.get("parts", []), f"{ptr}/parts")))
        messages.append(Message(r.string(m, "role", ptr), parts, extra=r.mapping(m, "extra", ptr) or EMPTY))
    params = freeze(r.obj(obj.get("params", {}), "/params"))
    return Request(route, tuple(system), tuple(tools), tuple(messages), params)


def request_from_json(data: bytes | str, *, path: str | Path | None = None) -> Request:
    """Parse canonical request JSON; bad input raises :class:`InputError`
    naming the file and the JSON pointer."""
    p = str(path) if path is not None else None
    return request_from_obj(loads(data, path=p), path=p)


def load_request(path: str | Path) -> Request:
    """Read a canonical request file."""
    from .jsonio import read_bytes

    return request_from_json(read_bytes(path), path=path)
