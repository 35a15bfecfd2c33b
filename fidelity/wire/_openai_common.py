"""Pieces shared by the OpenAI-family dialects (Chat Completions, Responses,
and the OpenAI-compatible DeepSeek, DashScope, vLLM and SGLang endpoints).

Top-level key order
-------------------
The openai SDK builds the body as a dict literal in a fixed order inside
``create()`` and drops omitted arguments (``maybe_transform``); it then merges
``extra_body`` with ``{**json_data, **extra_json}`` so that an ``extra_body``
key already present keeps its slot and new keys follow in ``extra_body``
order. Sources: ``openai/resources/chat/completions/completions.py``
(``Completions.create``, the ``body=maybe_transform({...})`` literal) and
``openai/_base_client.py`` (``_build_request`` -> ``_merge_mappings``),
openai 3.57.0. Nested objects are passed through in the caller's order.

fidelity's deterministic rule, used by every renderer here: keys the SDK
knows come first in the SDK's order, then every other key in the order of
``Request.params``. For SDK-made bodies this is exactly the wire order;
``Request.params`` itself keeps whatever order the caller gave.

Verbatim fallback
-----------------
A parsed message (or tool) whose wire layout differs from fidelity's
canonical layout (say ``{"content": ..., "role": ...}``, or list content
holding one plain text part) is kept verbatim so that ``render(parse(b)) == b``
for every body: its ``Message.extra`` (``Tool.extra``) then holds the whole
wire object, recognisable by a ``"role"`` key (for tools: a ``"type"`` key,
which a function object never has). Renderers emit such objects as they
are; the parts are still filled in for analysis.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from ..errors import InputError
from ..jsonbytes import dumps_compact, pointer
from ..model import EMPTY, FrozenDict, Image, Message, Text, Tool, ToolCall, freeze
from . import Segment
from .spans import top_elements, top_members

__all__ = [
    "CHAT_KEYS",
    "RESPONSES_KEYS",
    "sdk_ordered",
    "same_json",
    "require_object",
    "require_list",
    "render_tool",
    "parse_tool",
    "result_content",
    "render_part",
    "parse_part",
    "render_content",
    "parse_content",
    "arguments_string",
    "parse_arguments",
    "params_segment",
    "array_segments",
    "is_system_message",
    "leading_system_count",
    "message_from_verbatim",
]

#: ``Completions.create`` body literal order (openai 3.57.0,
#: openai/resources/chat/completions/completions.py).
CHAT_KEYS: tuple[str, ...] = (
    "model", "stream", "service_tier", "messages", "audio", "frequency_penalty",
    "function_call", "functions", "logit_bias", "logprobs", "max_completion_tokens",
    "max_tokens", "metadata", "modalities", "moderation", "n", "parallel_tool_calls",
    "prediction", "presence_penalty", "prompt_cache_key", "prompt_cache_options",
    "prompt_cache_retention", "reasoning_effort", "response_format", "safety_identifier",
    "seed", "stop", "store", "stream_options", "temperature", "tool_choice", "tools",
    "top_logprobs", "top_p", "user", "verbosity", "web_search_options",
)

#: ``Responses.create`` body literal order (openai 3.57.0,
#: openai/resources/responses/responses.py).
RESPONSES_KEYS: tuple[str, ...] = (
    "model", "stream", "service_tier", "access_programs", "background",
    "background_options", "context_management", "conversation", "image", "include",
    "input", "instructions", "max_output_tokens", "max_tool_calls", "metadata",
    "moderation", "parallel_tool_calls", "previous_response_id", "prompt",
    "prompt_cache_key", "prompt_cache_options", "prompt_cache_retention", "reasoning",
    "safety_identifier", "store", "stream_options", "temperature", "text", "tool_choice",
    "tools", "top_logprobs", "top_p", "truncation", "user",
)


def sdk_ordered(fields: Mapping[str, Any], sdk_keys: Sequence[str]) -> dict[str, Any]:
    """Order a body: SDK-known keys in SDK order, then the rest in given order."""
    known = set(sdk_keys)
    out = {k: fields[k] for k in sdk_keys if k in fields}
    out.update((k, v) for k, v in fields.items() if k not in known)
    return out


def same_json(a: Any, b: Any) -> bool:
    """Equal including key order and number types (compared as wire bytes)."""
    try:
        return dumps_compact(a) == dumps_compact(b)
    except InputError:
        return False


def require_object(obj: Any, where: str, path: str | None = None) -> dict[str, Any]:
    if not isinstance(obj, dict):
        raise InputError(f"expected a JSON object, got {type(obj).__name__}", path=path, pointer=where)
    return obj


def require_list(obj: Any, where: str, path: str | None = None) -> list[Any]:
    if not isinstance(obj, list):
        raise InputError(f"expected a JSON array, got {type(obj).__name__}", path=path, pointer=where)
    return obj


# ---------------------------------------------------------------- tools


def render_tool(tool: Tool) -> dict[str, Any]:
    """Chat Completions function tool: ``{"type":"function","function":{name,
    description?, parameters?, ...extra}}`` (OpenAI API reference,
    https://platform.openai.com/docs/api-reference/chat/create, ``tools``)."""
    if "type" in tool.extra:
        return dict(tool.extra)  # verbatim fallback: the whole wire object
    fn: dict[str, Any] = {"name": tool.name}
    if tool.description is not None:
        fn["description"] = tool.description
    if tool.parameters is not None:
        fn["parameters"] = tool.parameters
    fn.update(tool.extra)
    return {"type": "function", "function": fn}


def parse_tool(obj: Any, where: str) -> Tool:
    obj = require_object(obj, where)
    fn = obj.get("function") if obj.get("type") == "function" else None
    if isinstance(fn, dict) and isinstance(fn.get("name"), str):
        params = fn.get("parameters")
        tool = Tool(
            name=fn["name"],
            description=fn.get("description") if isinstance(fn.get("description"), str) else None,
            parameters=freeze(params) if isinstance(params, dict) else None,
            extra=FrozenDict((k, freeze(v)) for k, v in fn.items() if k not in ("name", "description", "parameters")),
        )
        if same_json(render_tool(tool), obj):
            return tool
        return Tool(name=fn["name"], description=tool.description, parameters=tool.parameters, extra=freeze(obj))
    if "type" not in obj:
        raise InputError("tool has no \"type\"", pointer=where)
    return Tool(name=str(obj.get("name", obj["type"])), extra=freeze(obj))


# ---------------------------------------------------------------- content parts


def result_content(content: Any, render: Any) -> Any:
    """Wire ``content`` of a tool result: text as is, a list of parts through
    ``render``, and an object (a Gemini-style ``response``) as its compact
    JSON text, the way harnesses bridge Gemini histories to OpenAI-style
    APIs (Qwen Code serialises ``functionResponse.response`` to a string)."""
    if isinstance(content, str):
        return content
    if isinstance(content, Mapping):
        return dumps_compact(content).decode("utf-8")
    if not isinstance(content, (list, tuple)):
        raise InputError(f"a tool result with {type(content).__name__} content cannot be written here: "
                         "the API requires text or a list of parts")
    return [render(p) for p in content]


def render_part(part: Any) -> dict[str, Any]:
    """A Chat Completions content part (text or image_url)."""
    if isinstance(part, Text):
        out: dict[str, Any] = {"type": "text", "text": part.text}
        if part.cache_control is not None:
            out["cache_control"] = part.cache_control
        return out
    if isinstance(part, Image):
        img: dict[str, Any] = {"url": part.url}
        if part.detail is not None:
            img["detail"] = part.detail
        return {"type": "image_url", "image_url": img}
    raise InputError(f"a {type(part).__name__} part cannot go in Chat Completions message content")


def parse_part(obj: Any, where: str) -> Text | Image | None:
    """Text / Image part, or ``None`` when the part has another shape."""
    if not isinstance(obj, dict):
        return None
    if obj.get("type") == "text" and isinstance(obj.get("text"), str):
        cc = obj.get("cache_control")
        return Text(obj["text"], cache_control=freeze(cc) if isinstance(cc, dict) else None)
    if obj.get("type") == "image_url" and isinstance(obj.get("image_url"), dict):
        img = obj["image_url"]
        if isinstance(img.get("url"), str):
            detail = img.get("detail")
            return Image(img["url"], detail=detail if isinstance(detail, str) else None)
    return None


def render_content(parts: Sequence[Any]) -> Any:
    """String content for one plain text part, else a list of parts."""
    if len(parts) == 1 and isinstance(parts[0], Text) and parts[0].cache_control is None:
        return parts[0].text
    return [render_part(p) for p in parts]


def parse_content(content: Any, where: str) -> tuple[Any, ...]:
    if isinstance(content, str):
        return (Text(content),)
    if content is None:
        return ()
    if isinstance(content, list):
        parts = []
        for i, item in enumerate(content):
            part = parse_part(item, f"{where}/{i}")
            if part is not None:
                parts.append(part)
        return tuple(parts)
    return ()


def arguments_string(call: ToolCall) -> str:
    """The wire ``arguments`` string: the exact replayed string if known,
    else the compact SDK serialisation of the argument object."""
    if call.arguments_json is not None:
        return call.arguments_json
    return dumps_compact(call.arguments).decode("utf-8")


def parse_arguments(text: str) -> Any:
    """Arguments object from its string; unparsable strings give ``EMPTY``
    (the string itself is kept in ``arguments_json``)."""
    import json

    try:
        return freeze(json.loads(text))
    except (ValueError, RecursionError):
        return EMPTY


# ---------------------------------------------------------------- cache view


def params_segment(body: bytes, keys: Iterable[str], text: str | None = None) -> Segment:
    """The leading params segment: each cache-key member ``"key":value`` as it
    appears in ``body``, in the order of ``keys`` (absent keys skipped)."""
    members = {m.key: m for m in top_members(body)}
    data = b",".join(body[members[k].start : members[k].end] for k in keys if k in members)
    return Segment("params", 0, "", data, text)


def array_segments(body: bytes, key: str, kind: str, first_index: int,
                   skip: int = 0, texts: Sequence[str | None] | None = None,
                   limit: int | None = None) -> list[Segment]:
    """One segment per element of the top-level array ``key`` (elements
    ``skip`` to ``limit``), slicing the exact bytes."""
    spans = top_elements(body, key)
    out = []
    stop = len(spans) if limit is None else min(limit, len(spans))
    head = pointer(key)  # each element's pointer is head + "/" + its index
    for n, i in enumerate(range(skip, stop)):
        start, end = spans[i]
        text = texts[i] if texts is not None and i < len(texts) else None
        out.append(Segment(kind, first_index + n, f"{head}/{i}", body[start:end], text))  # type: ignore[arg-type]
    return out


def is_system_message(obj: Any) -> bool:
    return isinstance(obj, dict) and obj.get("role") in ("system", "developer")


def leading_system_count(messages: Sequence[Any]) -> int:
    n = 0
    for m in messages:
        if not is_system_message(m):
            break
        n += 1
    return n


def message_from_verbatim(obj: Mapping[str, Any], parts: tuple[Any, ...]) -> Message:
    """A message kept verbatim (see module docstring)."""
    return Message(role=str(obj.get("role")), parts=parts, extra=freeze(obj))
