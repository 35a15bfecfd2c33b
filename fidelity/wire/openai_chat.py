"""OpenAI Chat Completions (``POST /v1/chat/completions``) and the base class
of the OpenAI-compatible dialects (DeepSeek, DashScope, vLLM, SGLang).

Wire bytes: the openai Python SDK's ``client.chat.completions.create(...)``
body (see :mod:`._json` for the serialiser, :mod:`._openai_common` for the
top-level key order). Canonical layout of nested objects (the order of the
OpenAI API reference, https://platform.openai.com/docs/api-reference/chat/create):

* system / developer / user: ``{"role", "content"}`` then extra keys; content
  is a string for one plain text part, else a list of ``text`` /
  ``image_url`` parts.
* assistant: ``{"role", "content", "reasoning_content"?, "tool_calls"?}``;
  content is ``null`` when there is no text; each tool call is
  ``{"id", "type": "function", "function": {"name", "arguments"}}``.
* tool: ``{"role": "tool", "tool_call_id", "content"}``.

Other layouts are kept verbatim (see :mod:`._openai_common`).
``Request.system`` renders as one leading ``system`` message; parsing keeps
system messages where they are (role ``system``/``developer`` messages), so
that the round trip is exact.

Cache view (OpenAI): params, then one segment per tool, then the leading
system/developer messages, then the other messages. OpenAI's prompt-caching
guide (https://platform.openai.com/docs/guides/prompt-caching) says caching
works on exact prefix matches, that "messages, images, tools and structured
output schemas" can be cached, and recommends putting static content
(instructions, tools) first; the model sees tools and the response schema
ahead of the conversation (they are rendered into the system header).
Cache-key parameters (params segment, in this order): ``model`` (caches are
per model), ``prompt_cache_key`` (the guide: "combined with the prefix hash"
to route requests), ``reasoning_effort`` and ``verbosity`` (rendered into the
model's system header; fidelity assumes they count), ``tool_choice``,
``parallel_tool_calls``, ``response_format`` (the guide lists structured
output schemas as cached prefix content).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from ..errors import InputError
from ..jsonbytes import loads
from ..model import Message, Reasoning, Request, Route, Text, Tool, ToolCall, ToolResult, freeze
from . import Segment, register
from ._openai_common import (
    CHAT_KEYS,
    arguments_string,
    array_segments,
    leading_system_count,
    message_from_verbatim,
    params_segment,
    parse_arguments,
    parse_content,
    parse_part,
    parse_tool,
    render_content,
    render_part,
    render_tool,
    require_list,
    require_object,
    result_content,
    same_json,
    sdk_ordered,
)
from .profiles import attach, write_request
from .spans import parsed

_ASSISTANT_KEYS = ("role", "content", "reasoning_content", "tool_calls")
_TOOL_KEYS = ("role", "tool_call_id", "content")

#: A function giving the chat-template text of each segment of a parsed body,
#: keyed by (kind, index); see :mod:`._template`.
Templater = Callable[[dict[str, Any]], dict[tuple[str, int], str]]


def render_message(message: Message) -> dict[str, Any]:
    """One Chat Completions message in fidelity's canonical layout."""
    if "role" in message.extra:
        return dict(message.extra)  # verbatim
    role = message.role
    if role == "assistant":
        texts = [p for p in message.parts if isinstance(p, Text)]
        out: dict[str, Any] = {"role": "assistant", "content": render_content(texts) if texts else None}
        reasoning = [p for p in message.parts if isinstance(p, Reasoning)]
        if reasoning:
            out["reasoning_content"] = "".join(r.text for r in reasoning)
        calls = message.tool_calls()
        if calls:
            out["tool_calls"] = [
                {"id": c.id, "type": "function", "function": {"name": c.name, "arguments": arguments_string(c)}}
                for c in calls
            ]
    elif role == "tool":
        results = message.tool_results()
        if len(results) != 1:
            raise InputError(f"a tool message holds exactly one tool result, found {len(results)}")
        r = results[0]
        content = result_content(r.content, render_part)
        out = {"role": "tool", "tool_call_id": r.call_id, "content": content}
    else:
        parts = [p for p in message.parts if isinstance(p, (Text,)) or p.kind == "image"]
        out = {"role": role, "content": render_content(parts)}
    out.update(message.extra)
    return out


def parse_message(obj: Any, where: str) -> Message:
    """A wire message to a :class:`Message` (verbatim when the layout is not canonical)."""
    obj = require_object(obj, where)
    role = obj.get("role")
    if not isinstance(role, str):
        raise InputError("message has no string \"role\"", pointer=where)
    parts: list[Any] = []
    known: tuple[str, ...]
    if role == "assistant":
        known = _ASSISTANT_KEYS
        rc = obj.get("reasoning_content")
        if isinstance(rc, str):
            parts.append(Reasoning(rc))
        parts.extend(parse_content(obj.get("content"), where + "/content"))
        calls = obj.get("tool_calls")
        if calls is not None and not isinstance(calls, list):
            raise InputError(f"\"tool_calls\" must be an array, got {type(calls).__name__}", pointer=where + "/tool_calls")
        for call in calls or ():
            fn = call.get("function") if isinstance(call, dict) else None
            if isinstance(fn, dict) and isinstance(fn.get("arguments"), str):
                parts.append(ToolCall(id=str(call.get("id", "")), name=str(fn.get("name", "")),
                                      arguments=parse_arguments(fn["arguments"]),
                                      arguments_json=fn["arguments"]))
    elif role == "tool":
        known = _TOOL_KEYS
        content = obj.get("content")
        if not isinstance(content, (str, list)):
            # The API requires it: ChatCompletionToolMessageParam has a required
            # ``content``, a string or an array of text parts
            # (https://platform.openai.com/docs/api-reference/chat/create).
            what = "no \"content\"" if "content" not in obj else f"a {type(content).__name__} \"content\""
            raise InputError(f"tool message has {what}; the API requires a string or an array of text parts",
                             pointer=where)
        if isinstance(content, list):
            content = tuple(p for p in (parse_part(c, where) for c in content) if p is not None)
        parts.append(ToolResult(call_id=str(obj.get("tool_call_id", "")), content=content))
    else:
        known = ("role", "content")
        parts.extend(parse_content(obj.get("content"), where + "/content"))
    extra = freeze({k: v for k, v in obj.items() if k not in known})
    message = Message(role=role, parts=tuple(parts), extra=extra)
    try:
        if same_json(render_message(message), obj):
            return message
    except InputError:
        pass
    return message_from_verbatim(obj, tuple(parts))


@dataclass(frozen=True)
class ChatDialect:
    """A Chat-Completions-shaped dialect; subclasses differ in name, cache
    order, cache-key parameters, chat template and detection."""

    name: str = "openai-chat"
    provider: str = "openai"
    priority: int = 0
    #: top-level keys gathered in the params segment, in this order
    cache_keys: tuple[str, ...] = (
        "model", "prompt_cache_key", "reasoning_effort", "verbosity",
        "tool_choice", "parallel_tool_calls", "response_format",
    )
    #: "openai": tools before system; "template": system before tools
    cache_order: str = "openai"
    templater: Templater | None = None

    # ------------------------------------------------------------ render

    def body(self, request: Request) -> dict[str, Any]:
        """The body object (SDK key order) that :meth:`render` serialises."""
        fields: dict[str, Any] = dict(request.params)
        for reserved in ("model", "messages"):
            if reserved in fields:
                raise InputError(f"params must not hold {reserved!r}; it comes from the request itself")
        messages: list[Any] = []
        if request.system:
            messages.append(self.system_message(request))
        messages.extend(render_message(m) for m in request.messages)
        fields["model"] = request.route.model
        fields["messages"] = messages
        if request.tools:
            fields["tools"] = [render_tool(t) for t in request.tools]
        return sdk_ordered(fields, CHAT_KEYS)

    def system_message(self, request: Request) -> dict[str, Any]:
        """``Request.system`` as one leading ``system`` message: string content
        for one plain block, else one text part per block (keeps
        ``cache_control`` and block ``extra`` keys)."""
        blocks = request.system
        if len(blocks) == 1 and blocks[0].cache_control is None and not blocks[0].extra:
            return {"role": "system", "content": blocks[0].text}
        parts = []
        for b in blocks:
            part: dict[str, Any] = {"type": "text", "text": b.text}
            if b.cache_control is not None:
                part["cache_control"] = b.cache_control
            part.update(b.extra)
            parts.append(part)
        return {"role": "system", "content": parts}

    def render(self, request: Request) -> bytes:
        """The body in the request's layout (parsed bytes or client profile), else the current SDK's."""
        return write_request(request, self.body(request), self.name)

    # ------------------------------------------------------------ parse

    def parse(self, body: bytes, *, path: str | None = None, model: str = "") -> Request:
        """The request, remembering how ``body`` was written (:mod:`.layout`).
        ``model``: for a body that leaves it to the URL (Azure OpenAI names
        the deployment in the path)."""
        obj = require_object(loads(body, path=path), "", path)
        found = obj.get("model") if "model" in obj or not model else model
        if not isinstance(found, str):
            raise InputError("body has no string \"model\"", path=path, pointer="/model")
        model = found
        raw_messages = require_list(obj.get("messages"), "/messages", path)
        try:
            messages = tuple(parse_message(m, f"/messages/{i}") for i, m in enumerate(raw_messages))
            tools_raw = obj.get("tools")
            tools: tuple[Tool, ...] = ()
            if isinstance(tools_raw, list) and tools_raw:
                tools = tuple(parse_tool(t, f"/tools/{i}") for i, t in enumerate(tools_raw))
        except InputError as exc:
            raise (exc.at(path) if path else exc) from None
        params = {k: v for k, v in obj.items() if k not in ("model", "messages") and not (k == "tools" and tools)}
        return attach(Request(route=Route(self.provider, model), tools=tools, messages=messages, params=freeze(params)),
                      body, obj, self.name, url_keys=("model",))

    # ------------------------------------------------------------ cache view

    @property
    def view_key(self) -> tuple[Any, ...]:
        """What :meth:`cache_view` depends on besides the body: two dialects
        with equal keys view every body alike (vLLM and SGLang), so a memo of
        views may share them."""
        return (type(self), self.cache_keys, self.cache_order, self.templater)

    def cache_view(self, body: bytes) -> list[Segment]:
        obj = require_object(parsed(body), "")
        messages = obj.get("messages")
        messages = messages if isinstance(messages, list) else []
        n_system = leading_system_count(messages)
        texts = self.templater(obj) if self.templater else {}
        tool_texts = [texts.get(("tools", i)) for i in range(len(obj.get("tools") or ()))] if isinstance(obj.get("tools"), list) else None
        msg_texts = [texts.get(("message", i)) for i in range(len(messages))]
        params = params_segment(body, self.cache_keys, texts.get(("params", 0)))
        tools = array_segments(body, "tools", "tools", 0, texts=tool_texts) if isinstance(obj.get("tools"), list) else []
        system = array_segments(body, "messages", "system", 0, limit=n_system, texts=msg_texts)
        rest = array_segments(body, "messages", "message", 0, skip=n_system, texts=msg_texts)
        if self.cache_order == "template":
            return [params, *system, *tools, *rest]
        return [params, *tools, *system, *rest]

    # ------------------------------------------------------------ detect

    def detect(self, obj: Any) -> bool:
        """A Chat Completions body: ``model`` and a ``messages`` array, and
        none of the markers of the more specific OpenAI-compatible dialects."""
        return isinstance(obj, dict) and isinstance(obj.get("model"), str) and isinstance(obj.get("messages"), list)


OPENAI_CHAT = register(ChatDialect())

__all__ = ["ChatDialect", "OPENAI_CHAT", "render_message", "parse_message", "Templater"]
