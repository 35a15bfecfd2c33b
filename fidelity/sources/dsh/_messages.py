"""The surface: which messages reached the model at a step (:mod:`fidelity.sources.dsh`)."""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import orjson

from ...model import EMPTY, FrozenDict, Image, Message, Part, Reasoning, Text, ToolCall, ToolResult
from ._checks import _fail, _obj
from ._values import _SURFACE_TYPES, Event, Session

__all__ = ["step_messages", "step_reply", "tool_arguments"]

#: 19 digits in a row: an integer that may lie beyond 64 bits
_LONG_DIGITS = re.compile(r"[0-9]{19}")


def tool_arguments(text: str) -> Any:
    """A tool call's ``arguments`` string parsed, :data:`~fidelity.model.EMPTY`
    when it is not JSON. A text holding a run of 19 digits is parsed with
    ``json.loads``, which keeps integers beyond 64 bits exact (orjson makes them floats)."""
    try:
        parsed = orjson.loads(text)
    except orjson.JSONDecodeError:
        return EMPTY
    if _LONG_DIGITS.search(text) is not None:
        try:
            parsed = json.loads(text)  # orjson accepted it, so it is strict JSON
        except (ValueError, RecursionError):  # past Python's digit limit or recursion: keep orjson's value
            pass
    return parsed


def _content(value: Any, what: str, path: Path, line: int) -> tuple[FrozenDict, ...]:
    if not isinstance(value, tuple) or not all(isinstance(v, dict) for v in value):
        raise _fail(f"{what} must be a list of content parts", path, line)
    return value


def _text_or_image(part: FrozenDict, what: str, path: Path, line: int) -> Part:
    kind = part.get("type")
    if kind == "text" and isinstance(part.get("text"), str):
        return Text(part["text"])
    if kind == "image":
        url = part.get("url") or part.get("data")
        if isinstance(url, str):
            media = part.get("mediaType") or part.get("mimeType")
            if not url.startswith(("data:", "http:", "https:")) and isinstance(media, str):
                url = f"data:{media};base64,{url}"
            return Image(url=url, media_type=media if isinstance(media, str) else None)
        att = part.get("attachment")
        if isinstance(att, dict):
            return attachment_image(att)
    raise _fail(f"{what}: unsupported content part {orjson.dumps(part)[:80].decode()}", path, line)


def attachment_image(att: Any) -> Image:
    """An image attachment whose bytes the log does not keep, as a reference
    ``attachment:<id>`` whose query carries the recorded size (read by
    :mod:`fidelity.tokens.media`)."""
    ident = att.get("attachmentId") or att.get("sha256") or att.get("name") or "unknown"
    query = "&".join(f"{k}={att[k]}" for k in ("width", "height", "bytes")
                     if isinstance(att.get(k), int) and not isinstance(att.get(k), bool))
    media = att.get("mediaType")
    return Image(url=f"attachment:{ident}" + (f"?{query}" if query else ""),
                 media_type=media if isinstance(media, str) else None)


def _tool_result_content(parts: tuple[FrozenDict, ...], path: Path, line: int) -> Any:
    converted = tuple(_text_or_image(p, "tool result", path, line) for p in parts)
    if all(isinstance(p, Text) for p in converted):
        return "".join(p.text for p in converted)  # type: ignore[union-attr]
    return converted


def _message_of(event: Event, calls: dict[str, str], path: Path) -> list[Message]:
    """The canonical message(s) one surface event carries."""
    kind, data, line = event.type, event.data, event.line
    if kind == "user/message":
        parts = _content(data.get("content"), "user/message content", path, line)
        return [Message("user", tuple(_text_or_image(p, "user/message", path, line) for p in parts))]
    if kind == "system/message":
        message = _obj(data.get("message", data), "system/message message", path, line)
        parts = _content(message.get("content"), "system/message content", path, line)
        return [Message("system", tuple(_text_or_image(p, "system/message", path, line) for p in parts))]
    if kind == "assistant/message":
        message = data.get("message", data)  # new form nests it; the older apps/web form does not
        message = _obj(message, "assistant/message message", path, line)
        out: list[Part] = []
        for part in _content(message.get("content"), "assistant/message content", path, line):
            ptype = part.get("type")
            if ptype == "reasoning" and isinstance(part.get("text"), str):
                out.append(Reasoning(part["text"]))
            elif ptype == "text" and isinstance(part.get("text"), str):
                out.append(Text(part["text"]))
            elif ptype == "tool-call":
                cid, name, args = part.get("id"), part.get("name"), part.get("arguments")
                if not (isinstance(cid, str) and isinstance(name, str) and isinstance(args, str)):
                    raise _fail("tool-call part needs string id, name and arguments", path, line)
                parsed = tool_arguments(args)
                calls[cid] = name
                out.append(ToolCall(id=cid, name=name, arguments=parsed, arguments_json=args))
            else:
                raise _fail(f"assistant/message: unsupported content part type {ptype!r}", path, line)
        return [Message("assistant", tuple(out))]
    # tool/result
    if "message" in data:
        message = _obj(data["message"], "tool/result message", path, line)
        results = []
        for part in _content(message.get("content"), "tool/result content", path, line):
            if part.get("type") != "tool-result" or not isinstance(part.get("toolCallId"), str):
                raise _fail("tool/result content must be tool-result parts with a toolCallId", path, line)
            results.append((part["toolCallId"], part.get("content", ()), part.get("isError", False)))
    else:  # older form: {"callId", "content", "isError"} directly in data
        if not isinstance(data.get("callId"), str):
            raise _fail("tool/result needs a callId", path, line)
        results = [(data["callId"], data.get("content", ()), data.get("isError", False))]
    out_msgs = []
    for call_id, content, is_error in results:
        if call_id not in calls:
            raise _fail(f"tool result for call {call_id!r}, which no earlier assistant message made", path, line)
        body = (
            content
            if isinstance(content, str)
            else _tool_result_content(_content(content, "tool-result content", path, line), path, line)
        )
        out_msgs.append(
            Message("tool", (ToolResult(call_id=call_id, name=calls[call_id], content=body, is_error=bool(is_error)),))
        )
    return out_msgs


def _surface_messages(events: Sequence[Event], path: Path) -> tuple[tuple[int, Message], ...]:
    """Convert every surface event once (validating it); index -> message(s)."""
    calls: dict[str, str] = {}
    out: list[tuple[int, Message]] = []
    for index, event in enumerate(events):
        if event.type == "tool/call":
            cid, name = event.data.get("callId"), event.data.get("name")
            if isinstance(cid, str) and isinstance(name, str):
                calls.setdefault(cid, name)
        if event.type in _SURFACE_TYPES and event.surface_op is not None:
            for message in _message_of(event, calls, path):
                out.append((index, message))
    return tuple(out)


def _surface_until(session: Session, cut: int) -> list[Message]:
    """Apply surface operations of events ``[0, cut)`` and return the surface."""
    by_index: dict[int, list[Message]] = {}
    for index, message in session._messages:
        by_index.setdefault(index, []).append(message)
    nodes: list[tuple[int, int, list[Message]]] = []  # (seq, line, messages)
    for index in sorted(i for i in by_index if i < cut):
        event = session.events[index]
        op = event.surface_op
        entry = (event.seq, event.line, by_index[index])
        if op == "append":
            nodes.append(entry)
        elif isinstance(op, dict) and op.get("op") == "replace":
            start, end = op.get("start"), op.get("end")
            seqs = [n[0] for n in nodes]
            if start not in seqs or end not in seqs:
                raise _fail(
                    f"surfaceOp replace names events {start}..{end}, not on the surface", session.path, event.line
                )
            a, b = seqs.index(start), seqs.index(end)
            if b < a:
                raise _fail(f"surfaceOp replace range {start}..{end} runs backwards", session.path, event.line)
            nodes[a : b + 1] = [entry]
        elif isinstance(op, dict) and op.get("op") == "append":
            nodes.append(entry)
        else:
            raise _fail(f"unsupported surfaceOp {orjson.dumps(op).decode()}", session.path, event.line)
    return [m for node in nodes for m in node[2]]


def step_messages(session: Session, turn: int, step: int) -> tuple[Message, ...]:
    """The conversation messages the harness sent at ``(turn, step)``: the surface
    built from every event before the step's request cut (a child's seed
    included, compaction replacements applied)."""
    s = session.step(turn, step)
    return tuple(_surface_until(session, s.request_index))


def step_reply(session: Session, turn: int, step: int) -> Message | None:
    """The assistant message the model produced at ``(turn, step)``: the
    surface message recorded at the step's request cut, or ``None`` when the
    step has none (in flight, failed). DeepSeek caches it after the step's
    prompt, so the next request can read it from the cache."""
    s = session.step(turn, step)
    for index, message in session._messages:
        if index == s.request_index and message.role == "assistant":
            return message
    return None
