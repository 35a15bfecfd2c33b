"""Gemini ``Content[]`` histories, as Qwen Code keeps them, read and written.

Shapes: https://ai.google.dev/api/caching#Content ; Qwen Code's history is
``@google/genai`` ``Content[]`` (QwenLM/qwen-code,
``packages/core/src/core/geminiChat.ts``). Role ``model`` is ``assistant``,
a thought part a :class:`Reasoning`, ``functionCall`` a :class:`ToolCall`,
``functionResponse`` a :class:`ToolResult` in a user message; a missing call
id reads as ``""``. ``to_gemini_contents(from_gemini_contents(x)) == x``
for every history in that form (docs/sources.md)."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from ..errors import InputError
from ..jsonio import load
from ..model import Message, Part, Reasoning, Text, ToolCall, ToolResult, freeze, thaw

__all__ = ["read_gemini_history", "from_gemini_contents", "to_gemini_contents"]

_ROLES = {"user": "user", "model": "assistant"}


def read_gemini_history(path: str | Path) -> tuple[Message, ...]:
    """Read a JSON file holding a ``Content[]`` list (or ``{"contents": [...]}``
    / ``{"history": [...]}``)."""
    return from_gemini_contents(load(path), path=path)


def _named(obj: Any, key: str, field: str, path: Any, at: str) -> tuple[str, str, Any]:
    """``(name, id, field)`` of a ``functionCall`` / ``functionResponse`` object (a missing id reads ``""``)."""
    at = f"{at}/{key}"
    if not isinstance(obj, dict) or not isinstance(obj.get("name"), str) or not set(obj) <= {"id", "name", field}:
        raise InputError(f"{key} needs a string name (and optional id, {field})", path=path, pointer=at)
    cid = obj.get("id", "")
    if not isinstance(cid, str):
        raise InputError(f"{key} id must be a string", path=path, pointer=at + "/id")
    value = obj.get(field, {})
    if not isinstance(value, dict):
        raise InputError(f"{key} {field} must be an object", path=path, pointer=f"{at}/{field}")
    return obj["name"], cid, freeze(value)


def _part(part: Any, path: Any, at: str) -> Part:
    if not isinstance(part, dict):
        raise InputError("a part must be an object", path=path, pointer=at)
    keys = tuple(part)
    if "text" in part:
        if not isinstance(part["text"], str):
            raise InputError("text must be a string", path=path, pointer=at + "/text")
        if keys == ("text",):
            return Text(part["text"])
        if part.get("thought") is True and set(keys) <= {"text", "thought", "thoughtSignature"}:
            sig = part.get("thoughtSignature")
            if sig is not None and not isinstance(sig, str):
                raise InputError("thoughtSignature must be a string", path=path, pointer=at + "/thoughtSignature")
            return Reasoning(part["text"], signature=sig)
        raise InputError(f"unsupported text part keys {list(keys)}", path=path, pointer=at)
    if keys == ("functionCall",):
        name, cid, args = _named(part["functionCall"], "functionCall", "args", path, at)
        return ToolCall(id=cid, name=name, arguments=args)
    if keys == ("functionResponse",):
        name, cid, body = _named(part["functionResponse"], "functionResponse", "response", path, at)
        return ToolResult(call_id=cid, name=name, content=body)
    raise InputError(f"unsupported part keys {list(keys)}", path=path, pointer=at)


def from_gemini_contents(value: Any, *, path: str | Path | None = None) -> tuple[Message, ...]:
    """``Content[]`` -> canonical messages. Bad shapes raise :class:`InputError`
    with the JSON pointer of the offending value."""
    prefix = ""
    if isinstance(value, dict):
        for key in ("contents", "history"):
            if isinstance(value.get(key), (list, tuple)):
                value, prefix = value[key], f"/{key}"
                break
    if not isinstance(value, (list, tuple)):
        raise InputError("expected a JSON list of Gemini contents", path=path, pointer=prefix)
    out = []
    for i, content in enumerate(value):
        at = f"{prefix}/{i}"
        if not isinstance(content, dict) or set(content) - {"role", "parts"}:
            raise InputError("a content must be an object with role and parts only", path=path, pointer=at)
        role = _ROLES.get(content.get("role"))  # type: ignore[arg-type]
        if role is None:
            raise InputError(f"role must be 'user' or 'model', got {content.get('role')!r}",
                             path=path, pointer=at + "/role")
        parts = content.get("parts")
        if not isinstance(parts, (list, tuple)):
            raise InputError("parts must be a list", path=path, pointer=at + "/parts")
        out.append(Message(role, tuple(_part(p, path, f"{at}/parts/{j}") for j, p in enumerate(parts))))
    return tuple(out)


def _write_part(part: Part) -> dict[str, Any]:
    if isinstance(part, Text):
        return {"text": part.text}
    if isinstance(part, Reasoning):
        out: dict[str, Any] = {"text": part.text, "thought": True}
        if part.signature is not None:
            out["thoughtSignature"] = part.signature
        return out
    if isinstance(part, ToolCall):
        call: dict[str, Any] = {"id": part.id} if part.id else {}
        call["name"] = part.name
        call["args"] = thaw(part.arguments)
        return {"functionCall": call}
    if isinstance(part, ToolResult):
        resp: dict[str, Any] = {"id": part.call_id} if part.call_id else {}
        resp["name"] = part.name or ""
        content = part.content
        if isinstance(content, str):  # an OpenAI-style text result: Qwen Code wraps it as {"output": text}
            content = {"output": content}
        elif not isinstance(content, dict):
            raise InputError("a Gemini functionResponse needs an object or text result")
        resp["response"] = thaw(content)
        return {"functionResponse": resp}
    raise InputError(f"Gemini history cannot hold a {type(part).__name__} part")


def to_gemini_contents(messages: Sequence[Message]) -> list[dict[str, Any]]:
    """Canonical messages -> ``Content[]`` (plain dicts, key order as Qwen Code
    writes them). ``tool`` messages become ``user`` contents holding
    ``functionResponse`` parts; system/developer messages raise
    :class:`InputError` (Gemini keeps system text outside ``contents``)."""
    out = []
    for m in messages:
        if m.role == "assistant":
            role = "model"
        elif m.role in ("user", "tool"):
            role = "user"
        else:
            raise InputError(f"Gemini contents have no {m.role!r} role")
        out.append({"role": role, "parts": [_write_part(p) for p in m.parts]})
    return out
