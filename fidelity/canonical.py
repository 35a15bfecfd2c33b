"""The canonical request JSON format (``"fidelity": "request/1"``): a
provider-neutral :class:`Request` on disk, read by ``fidelity render``.
The format, its part types and rules: docs/wire-openai.md, "Canonical request
format". Key order inside ``parameters``, ``arguments``, ``params`` and every
``extra`` is kept (cache-relevant); ``request_from_json(request_to_json(r)) == r``.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

from .errors import InputError
from .jsonbytes import loads
from .model import (
    EMPTY,
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

FORMAT = "request/1"

__all__ = ["FORMAT", "request_to_obj", "request_to_json", "request_from_obj", "request_from_json", "load_request"]


def _with(out: dict[str, Any], **optional: Any) -> dict[str, Any]:
    """``out`` plus each of ``optional`` that is set (not ``None``), thawed."""
    out.update((k, thaw(v)) for k, v in optional.items() if v is not None)
    return out


def _part_to_obj(part: Any) -> dict[str, Any]:
    if isinstance(part, Text):
        return _with({"type": "text", "text": part.text}, cache_control=part.cache_control)
    if isinstance(part, Reasoning):
        return _with({"type": "reasoning", "text": part.text}, signature=part.signature)
    if isinstance(part, ToolCall):
        # a Gemini functionCall may carry no id: leave the key out (the reader
        # refuses "id": null), so canonical JSON never writes what it cannot read
        call = _with({"type": "tool_call"}, id=part.id)
        call.update(name=part.name, arguments=thaw(part.arguments))
        return _with(call, arguments_json=part.arguments_json, cache_control=part.cache_control)
    if isinstance(part, ToolResult):
        out = _with({"type": "tool_result"}, call_id=part.call_id, name=part.name)
        content = part.content
        if isinstance(content, str):
            out["content"] = content
        elif isinstance(content, tuple) and all(isinstance(p, (Text, Image)) for p in content):
            out["content"] = [_part_to_obj(p) for p in content]
        else:
            out["content_json"] = thaw(content)
        return _with(out, is_error=True if part.is_error else None, cache_control=part.cache_control)
    if isinstance(part, Image):
        return _with({"type": "image", "url": part.url}, detail=part.detail, media_type=part.media_type,
                     cache_control=part.cache_control)
    raise InputError(f"unknown part type {type(part).__name__}")


def request_to_obj(request: Request) -> dict[str, Any]:
    """The canonical JSON object of ``request`` (plain dicts, key order kept)."""
    out: dict[str, Any] = {
        "fidelity": FORMAT,
        "route": {"provider": request.route.provider, "model": request.route.model},
    }
    if request.system:
        out["system"] = [_with({"text": b.text}, name=b.name, cache_control=b.cache_control, extra=b.extra or None)
                         for b in request.system]
    if request.tools:
        out["tools"] = [_with({"name": t.name}, description=t.description, parameters=t.parameters,
                              extra=t.extra or None) for t in request.tools]
    if request.messages:
        out["messages"] = [_with({"role": m.role, "parts": [_part_to_obj(p) for p in m.parts]}, extra=m.extra or None)
                           for m in request.messages]
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

    def objects(self, obj: Mapping[str, Any], key: str, allowed: tuple[str, ...]) -> Iterator[tuple[str, Any]]:
        """Each element of the top-level array ``key`` (absent: none) with its pointer: an object, its keys checked."""
        for i, item in enumerate(self.lst(obj.get(key, []), f"/{key}")):
            ptr = f"/{key}/{i}"
            self.check_keys(self.obj(item, ptr), allowed, ptr)
            yield ptr, item


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
    system = tuple(SystemBlock(r.string(b, "text", ptr), name=r.string(b, "name", ptr, optional=True),
                               cache_control=r.mapping(b, "cache_control", ptr), extra=r.mapping(b, "extra", ptr) or EMPTY)
                   for ptr, b in r.objects(obj, "system", ("text", "name", "cache_control", "extra")))
    tools = tuple(Tool(r.string(t, "name", ptr), description=r.string(t, "description", ptr, optional=True),
                       parameters=r.mapping(t, "parameters", ptr), extra=r.mapping(t, "extra", ptr) or EMPTY)
                  for ptr, t in r.objects(obj, "tools", ("name", "description", "parameters", "extra")))
    messages = []
    for ptr, m in r.objects(obj, "messages", ("role", "parts", "extra")):
        parts = tuple(_part_from_obj(r, p, f"{ptr}/parts/{j}") for j, p in enumerate(r.lst(m.get("parts", []), f"{ptr}/parts")))
        messages.append(Message(r.string(m, "role", ptr), parts, extra=r.mapping(m, "extra", ptr) or EMPTY))
    params = freeze(r.obj(obj.get("params", {}), "/params"))
    return Request(route, system, tools, tuple(messages), params)


def request_from_json(data: bytes | str, *, path: str | Path | None = None) -> Request:
    """Parse canonical request JSON; bad input raises :class:`InputError`
    naming the file and the JSON pointer."""
    p = str(path) if path is not None else None
    return request_from_obj(loads(data, path=p), path=p)


def load_request(path: str | Path) -> Request:
    """Read a canonical request file."""
    from .jsonio import read_bytes

    return request_from_json(read_bytes(path), path=path)
