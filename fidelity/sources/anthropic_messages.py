"""Anthropic Messages ``messages`` lists (plain history files), read and written.

A file holds the list or ``{"messages": [...]}``; ``fidelity.wire`` owns the
request body. Shapes: https://docs.anthropic.com/en/api/messages and
https://docs.anthropic.com/en/docs/build-with-claude/extended-thinking ;
:func:`to_anthropic_messages` writes the normal form that round-trips
exactly (docs/sources.md, "OpenAI and Anthropic messages lists")."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from ..errors import InputError
from ..jsonio import load
from ..model import Image, Message, Part, Reasoning, Text, ToolCall, ToolResult, freeze, thaw

__all__ = ["read_anthropic_messages", "from_anthropic_messages", "to_anthropic_messages"]


def read_anthropic_messages(path: str | Path) -> tuple[Message, ...]:
    """Read a JSON file holding a Messages API ``messages`` list."""
    return from_anthropic_messages(load(path), path=path)


def _image(block: dict[str, Any], path: Any, at: str) -> Image:
    src = block.get("source")
    if isinstance(src, dict) and tuple(src) == ("type", "media_type", "data") and src["type"] == "base64" \
            and isinstance(src["media_type"], str) and isinstance(src["data"], str):
        return Image(url=f"data:{src['media_type']};base64,{src['data']}", media_type=src["media_type"])
    if isinstance(src, dict) and tuple(src) == ("type", "url") and src["type"] == "url" and isinstance(src["url"], str):
        return Image(url=src["url"])
    raise InputError("an image needs a base64 or url source", path=path, pointer=at + "/source")


def _block(block: Any, path: Any, at: str, *, in_result: bool = False) -> Part:
    if not isinstance(block, dict):
        raise InputError("a content block must be an object", path=path, pointer=at)
    kind, keys = block.get("type"), tuple(block)
    if kind == "text" and keys in (("type", "text"), ("type", "text", "cache_control")) \
            and isinstance(block["text"], str):
        return Text(block["text"], cache_control=block.get("cache_control"))
    if kind == "image" and keys == ("type", "source"):
        return _image(block, path, at)
    if in_result:
        raise InputError("a tool_result holds only text and image blocks", path=path, pointer=at)
    if kind == "thinking" and keys == ("type", "thinking", "signature") and isinstance(block["thinking"], str) \
            and isinstance(block["signature"], str):
        return Reasoning(block["thinking"], signature=block["signature"])
    if kind == "tool_use" and keys == ("type", "id", "name", "input") and isinstance(block["id"], str) \
            and isinstance(block["name"], str) and isinstance(block["input"], dict):
        return ToolCall(id=block["id"], name=block["name"], arguments=freeze(block["input"]))
    if kind == "tool_result" and keys[:2] == ("type", "tool_use_id") and set(keys) <= {
            "type", "tool_use_id", "content", "is_error"} and isinstance(block["tool_use_id"], str):
        content = block.get("content", "")
        if isinstance(content, str):
            body: Any = content
        elif isinstance(content, (list, tuple)):
            body = tuple(_block(b, path, f"{at}/content/{k}", in_result=True) for k, b in enumerate(content))
        else:
            raise InputError("tool_result content must be a string or a list", path=path, pointer=at + "/content")
        is_error = block.get("is_error", False)
        if not isinstance(is_error, bool):
            raise InputError("is_error must be a boolean", path=path, pointer=at + "/is_error")
        return ToolResult(call_id=block["tool_use_id"], content=body, is_error=is_error)
    raise InputError(f"unsupported content block type {kind!r} or keys {list(keys)}", path=path, pointer=at)


def from_anthropic_messages(value: Any, *, path: str | Path | None = None) -> tuple[Message, ...]:
    """A ``messages`` list (or ``{"messages": [...]}``) -> canonical messages."""
    prefix = ""
    if isinstance(value, dict) and "messages" in value:
        value, prefix = value["messages"], "/messages"
    if not isinstance(value, (list, tuple)):
        raise InputError("expected a JSON list of messages or {\"messages\": [...]}", path=path, pointer=prefix)
    out = []
    for i, m in enumerate(value):
        at = f"{prefix}/{i}"
        if not isinstance(m, dict) or tuple(m) != ("role", "content"):
            raise InputError('a message must be {"role", "content"}', path=path, pointer=at)
        if m["role"] not in ("user", "assistant"):
            raise InputError(f"role must be 'user' or 'assistant', got {m['role']!r}", path=path, pointer=at + "/role")
        content = m["content"]
        if isinstance(content, str):
            parts: tuple[Part, ...] = (Text(content),)
        elif isinstance(content, (list, tuple)):
            parts = tuple(_block(b, path, f"{at}/content/{k}") for k, b in enumerate(content))
        else:
            raise InputError("content must be a string or a list of blocks", path=path, pointer=at + "/content")
        out.append(Message(m["role"], parts))
    return tuple(out)


def _write_block(p: Part) -> dict[str, Any]:
    if isinstance(p, Text):
        out: dict[str, Any] = {"type": "text", "text": p.text}
        if p.cache_control is not None:
            out["cache_control"] = thaw(p.cache_control)
        return out
    if isinstance(p, Image) and p.url.startswith("data:") and ";base64," in p.url:
        media, data = p.url[5:].split(";base64,", 1)
        return {"type": "image", "source": {"type": "base64", "media_type": p.media_type or media, "data": data}}
    if isinstance(p, Image):
        return {"type": "image", "source": {"type": "url", "url": p.url}}
    if isinstance(p, Reasoning):
        return {"type": "thinking", "thinking": p.text, "signature": p.signature or ""}
    if isinstance(p, ToolCall):
        return {"type": "tool_use", "id": p.id, "name": p.name, "input": thaw(p.arguments)}
    if isinstance(p, ToolResult):
        out = {"type": "tool_result", "tool_use_id": p.call_id}
        if isinstance(p.content, str):
            out["content"] = p.content
        elif isinstance(p.content, tuple) and all(isinstance(b, (Text, Image)) for b in p.content):
            out["content"] = [_write_block(b) for b in p.content]
        else:
            raise InputError("an Anthropic tool_result holds text or text/image blocks")
        if p.is_error:
            out["is_error"] = True
        return out
    raise InputError(f"Anthropic messages cannot hold a {type(p).__name__} part")


def to_anthropic_messages(messages: Sequence[Message]) -> list[dict[str, Any]]:
    """Canonical messages -> a Messages API ``messages`` list in normal form.
    OpenAI-style ``tool`` messages become ``user`` messages holding
    ``tool_result`` blocks; system/developer messages raise
    :class:`InputError` (Anthropic keeps system text in ``system``)."""
    out = []
    for m in messages:
        if m.role not in ("user", "assistant", "tool"):
            raise InputError(f"Anthropic messages have no {m.role!r} role")
        role = "user" if m.role == "tool" else m.role
        parts = m.parts
        if len(parts) == 1 and isinstance(parts[0], Text) and parts[0].cache_control is None:
            content: Any = parts[0].text
        else:
            content = [_write_block(p) for p in parts]
        out.append({"role": role, "content": content})
    return out
