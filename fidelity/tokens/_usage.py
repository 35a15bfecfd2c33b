"""Prompt usage a provider reported in a response body (JSON or SSE).

The project's one reader is ``fidelity.capture.usage.from_response``
(written under issue 11); until it is importable this module's
:func:`from_response`, of the same signature and result shape, stands in
for it, and :func:`from_response` defers to it as soon as it exists.

Result (the shared snapshot ``usage`` convention): ``{"prompt", "cache_read",
"cache_write", "output", "source"}``, ``None`` where not reported.

* Anthropic Messages: prompt = ``input_tokens + cache_read_input_tokens +
  cache_creation_input_tokens`` (https://platform.claude.com/docs/en/build-with-claude/prompt-caching,
  "Tracking cache performance"); in a stream, ``message_start``'s
  ``message.usage``.
* OpenAI Chat Completions: ``usage.prompt_tokens`` and
  ``prompt_tokens_details.cached_tokens``; Responses: ``usage.input_tokens``
  and ``input_tokens_details.cached_tokens`` (in a stream, the
  ``response.completed`` event's ``response.usage``)
  (https://platform.openai.com/docs/api-reference/chat/object,
  https://platform.openai.com/docs/api-reference/responses/object).
* Gemini: ``usageMetadata.promptTokenCount`` and ``cachedContentTokenCount``
  (https://ai.google.dev/api/generate-content#UsageMetadata); in a stream,
  the last chunk that carries it.
* DeepSeek: ``prompt_tokens`` (= ``prompt_cache_hit_tokens +
  prompt_cache_miss_tokens``) (https://api-docs.deepseek.com/api/create-chat-completion).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import orjson

__all__ = ["from_response"]


def from_response(dialect_or_provider: str, content_type: str | None, body: bytes) -> dict[str, Any] | None:
    """The usage reported in ``body`` (a JSON response or an SSE stream), or ``None``."""
    shared: Callable[[str, str | None, bytes], dict[str, Any] | None] | None
    try:  # the project's reader, once issue 11 lands
        from ..capture.usage import from_response as reader

        shared = reader
    except ImportError:
        shared = None
    if shared is not None:
        return shared(dialect_or_provider, content_type, body)
    return _from_response(dialect_or_provider, content_type, body)


def _from_response(name: str, content_type: str | None, body: bytes) -> dict[str, Any] | None:
    sse = (content_type or "").startswith("text/event-stream") or body.lstrip()[:6] in (b"event:", b"data: ", b"data:{")
    if not sse:
        try:
            obj = orjson.loads(body)
        except orjson.JSONDecodeError:
            return None
        return _usage_of([obj], "json")
    events: list[Any] = []
    for line in body.splitlines():
        if line.startswith(b"data:"):
            payload = line[5:].strip()
            if payload and payload != b"[DONE]":
                try:
                    events.append(orjson.loads(payload))
                except orjson.JSONDecodeError:
                    continue
    if not events and body.lstrip()[:1] == b"[":  # Gemini's streamed JSON array
        try:
            arr = orjson.loads(body)
            events = arr if isinstance(arr, list) else []
        except orjson.JSONDecodeError:
            return None
    return _usage_of(events, "sse")


def _int(v: Any) -> int | None:
    return v if isinstance(v, int) and not isinstance(v, bool) else None


def _usage_of(events: list[Any], source: str) -> dict[str, Any] | None:
    """Anthropic streams: prompt figures from the first event (``message_start``),
    output from the last that has it; other streams: the last event with usage."""
    got = [(ev, u) for ev in events if isinstance(ev, dict) for u in (_one(ev),) if u is not None]
    if not got:
        return None
    if any(_anthropic(ev) for ev, _ in got):
        found = dict(next((u for _, u in got if u["prompt"] is not None), got[0][1]))
        outputs = [u["output"] for _, u in got if u["output"] is not None]
        if outputs:
            found["output"] = outputs[-1]
    else:
        found = dict(next((u for _, u in reversed(got) if u["prompt"] is not None), got[-1][1]))
    found["source"] = source
    return found


def _anthropic(ev: dict[str, Any]) -> bool:
    return ev.get("type") in ("message_start", "message_delta", "message")


def _one(ev: dict[str, Any]) -> dict[str, Any] | None:
    if ev.get("type") == "message_start" and isinstance(ev.get("message"), dict):
        ev = ev["message"]
    if isinstance(ev.get("response"), dict) and isinstance(ev["response"].get("usage"), dict):
        ev = ev["response"]  # Responses stream: response.completed
    meta = ev.get("usageMetadata")
    if isinstance(meta, dict):
        return {"prompt": _int(meta.get("promptTokenCount")), "cache_read": _int(meta.get("cachedContentTokenCount")) or 0,
                "cache_write": None, "output": _int(meta.get("candidatesTokenCount"))}
    usage = ev.get("usage")
    if not isinstance(usage, dict):
        return None
    if "cache_creation_input_tokens" in usage or "cache_read_input_tokens" in usage or ev.get("type") in ("message", "message_delta"):
        inp = _int(usage.get("input_tokens"))
        read = _int(usage.get("cache_read_input_tokens")) or 0
        write = _int(usage.get("cache_creation_input_tokens")) or 0
        return {"prompt": None if inp is None else inp + read + write, "cache_read": read, "cache_write": write,
                "output": _int(usage.get("output_tokens"))}
    if "prompt_tokens" in usage:
        details = usage.get("prompt_tokens_details") or {}
        cached = _int(details.get("cached_tokens")) if isinstance(details, dict) else None
        if cached is None:
            cached = _int(usage.get("prompt_cache_hit_tokens"))
        return {"prompt": _int(usage.get("prompt_tokens")), "cache_read": cached, "cache_write": None,
                "output": _int(usage.get("completion_tokens"))}
    if "input_tokens" in usage:
        details = usage.get("input_tokens_details") or {}
        cached = _int(details.get("cached_tokens")) if isinstance(details, dict) else None
        return {"prompt": _int(usage.get("input_tokens")), "cache_read": cached, "cache_write": None,
                "output": _int(usage.get("output_tokens"))}
    return None
