"""OpenAI Chat Completions ``messages`` lists (plain history files), read and written.

A file holds the list or ``{"messages": [...]}``; ``fidelity.wire`` owns the
request body. Shapes: https://platform.openai.com/docs/api-reference/chat/create ;
DeepSeek's ``reasoning_content``: https://api-docs.deepseek.com/guides/thinking_mode .
:func:`to_openai_messages` writes the normal form that round-trips exactly;
tool-call ``arguments`` stay verbatim in ``arguments_json``, other message
keys in :attr:`Message.extra` (docs/sources.md)."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import orjson

from ..errors import InputError
from ..jsonio import load
from ..model import EMPTY, Image, Message, Part, Reasoning, Text, ToolCall, ToolResult, freeze, thaw

__all__ = ["read_openai_messages", "from_openai_messages", "to_openai_messages"]

_KNOWN = {
    "system": ("role", "content"),
    "developer": ("role", "content"),
    "user": ("role", "content"),
    "assistant": ("role", "content", "reasoning_content", "tool_calls"),
    "tool": ("role", "tool_call_id", "content"),
}


def read_openai_messages(path: str | Path) -> tuple[Message, ...]:
    """Read a JSON file holding a Chat Completions ``messages`` list."""
    return from_openai_messages(load(path), path=path)


def _parts(content: Any, path: Any, at: str) -> tuple[Part, ...]:
    if content is None:
        return ()
    if isinstance(content, str):
        return (Text(content),)
    if not isinstance(content, (list, tuple)):
        raise InputError("content must be a string, a list of parts or null", path=path, pointer=at)
    out: list[Part] = []
    for j, part in enumerate(content):
        here = f"{at}/{j}"
        if isinstance(part, dict) and part.get("type") == "text" and set(part) == {"type", "text"} \
                and isinstance(part["text"], str):
            out.append(Text(part["text"]))
        elif isinstance(part, dict) and part.get("type") == "image_url" and set(part) == {"type", "image_url"}:
            img = part["image_url"]
            if not isinstance(img, dict) or not isinstance(img.get("url"), str) or set(img) - {"url", "detail"}:
                raise InputError("image_url needs a string url (and optional detail)",
                                 path=path, pointer=here + "/image_url")
            out.append(Image(url=img["url"], detail=img.get("detail")))
        else:
            raise InputError("unsupported content part", path=path, pointer=here)
    return tuple(out)


def _message(value: Any, path: Any, at: str) -> Message:
    if not isinstance(value, dict):
        raise InputError("a message must be an object", path=path, pointer=at)
    role = value.get("role")
    if role not in _KNOWN:
        raise InputError(f"unknown role {role!r}", path=path, pointer=at + "/role")
    extra = freeze({k: v for k, v in value.items() if k not in _KNOWN[role]})
    if role == "tool":
        cid, content = value.get("tool_call_id"), value.get("content")
        if not isinstance(cid, str):
            raise InputError("a tool message needs a string tool_call_id", path=path, pointer=at + "/tool_call_id")
        if isinstance(content, str):
            body: Any = content
        else:
            body = _parts(content, path, at + "/content")
        return Message("tool", (ToolResult(call_id=cid, content=body),), extra=extra)
    if "content" not in value and role != "assistant":
        raise InputError("a message needs content", path=path, pointer=at)
    parts: list[Part] = []
    if role == "assistant":
        reasoning = value.get("reasoning_content")
        if reasoning is not None:
            if not isinstance(reasoning, str):
                raise InputError("reasoning_content must be a string", path=path, pointer=at + "/reasoning_content")
            parts.append(Reasoning(reasoning))
    parts.extend(_parts(value.get("content"), path, at + "/content"))
    if role == "assistant" and "tool_calls" in value:
        calls = value["tool_calls"]
        if not isinstance(calls, (list, tuple)):
            raise InputError("tool_calls must be a list", path=path, pointer=at + "/tool_calls")
        for k, call in enumerate(calls):
            here = f"{at}/tool_calls/{k}"
            fn = call.get("function") if isinstance(call, dict) else None
            if not (isinstance(call, dict) and tuple(call) == ("id", "type", "function") and call["type"] == "function"
                    and isinstance(call["id"], str) and isinstance(fn, dict) and tuple(fn) == ("name", "arguments")
                    and isinstance(fn["name"], str) and isinstance(fn["arguments"], str)):
                raise InputError('a tool call must be {"id", "type": "function", "function": {"name", "arguments"}}',
                                 path=path, pointer=here)
            try:
                args = orjson.loads(fn["arguments"])
            except orjson.JSONDecodeError:
                args = EMPTY
            parts.append(ToolCall(id=call["id"], name=fn["name"], arguments=args, arguments_json=fn["arguments"]))
    return Message(role, tuple(parts), extra=extra)


def from_openai_messages(value: Any, *, path: str | Path | None = None) -> tuple[Message, ...]:
    """A ``messages`` list (or ``{"messages": [...]}``) -> canonical messages."""
    prefix = ""
    if isinstance(value, dict) and "messages" in value:
        value, prefix = value["messages"], "/messages"
    if not isinstance(value, (list, tuple)):
        raise InputError("expected a JSON list of messages or {\"messages\": [...]}", path=path, pointer=prefix)
    return tuple(_message(m, path, f"{prefix}/{i}") for i, m in enumerate(value))


def _content(parts: Sequence[Part]) -> Any:
    if len(parts) == 1 and isinstance(parts[0], Text) and parts[0].cache_control is None:
        return parts[0].text
    out: list[dict[str, Any]] = []
    for p in parts:
        if isinstance(p, Text):
            out.append({"type": "text", "text": p.text})
        elif isinstance(p, Image):
            img = {"url": p.url}
            if p.detail is not None:
                img["detail"] = p.detail
            out.append({"type": "image_url", "image_url": img})
        else:
            raise InputError(f"OpenAI message content cannot hold a {type(p).__name__} part")
    return out


def to_openai_messages(messages: Sequence[Message]) -> list[dict[str, Any]]:
    """Canonical messages -> a Chat Completions ``messages`` list in normal form.

    A ``tool`` message must hold exactly one :class:`ToolResult`; tool
    results inside other messages raise :class:`InputError`.
    """
    out: list[dict[str, Any]] = []
    for m in messages:
        if m.role == "tool":
            if len(m.parts) != 1 or not isinstance(m.parts[0], ToolResult):
                raise InputError("an OpenAI tool message holds exactly one tool result")
            r = m.parts[0]
            body = r.content if isinstance(r.content, str) else _content(r.content)
            row: dict[str, Any] = {"role": "tool", "tool_call_id": r.call_id, "content": body}
        elif m.role == "assistant":
            reasoning = [p for p in m.parts if isinstance(p, Reasoning)]
            calls = [p for p in m.parts if isinstance(p, ToolCall)]
            rest = [p for p in m.parts if not isinstance(p, (Reasoning, ToolCall))]
            row = {"role": "assistant", "content": _content(rest) if rest else None}
            if reasoning:
                row["reasoning_content"] = "".join(p.text for p in reasoning)
            if calls:
                row["tool_calls"] = [
                    {"id": c.id, "type": "function", "function": {
                        "name": c.name,
                        "arguments": c.arguments_json if c.arguments_json is not None
                        else orjson.dumps(thaw(c.arguments)).decode()}}
                    for c in calls]
        elif m.role in _KNOWN:
            if any(isinstance(p, (ToolCall, ToolResult, Reasoning)) for p in m.parts):
                raise InputError(f"an OpenAI {m.role} message holds only text and images")
            row = {"role": m.role, "content": _content(m.parts)}
        else:
            raise InputError(f"unknown role {m.role!r}")
        row.update(thaw(m.extra))
        out.append(row)
    return out
