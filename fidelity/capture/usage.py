"""What a response reported about prompt caching, read from its bytes.

:func:`from_response` is the one reader of response usage (the shared
snapshot convention): it takes a response body as recorded (JSON, a
server-sent event stream, an AWS event stream, or a JSON array of stream
chunks; gzip/deflate/br already removed by :func:`decode_body`) and returns

``{"prompt": int | None, "cache_read": int | None, "cache_write": int | None,
"output": int | None, "source": "json" | "sse"}`` or ``None`` when the
response reported no usage.

Where each figure comes from (the providers' API references):

* OpenAI Chat Completions: ``usage.prompt_tokens``,
  ``usage.prompt_tokens_details.cached_tokens``, ``usage.completion_tokens``;
  in a stream, the final chunk (``stream_options.include_usage``).
  ``cache_write`` is ``prompt_tokens_details.cache_write_tokens`` where the
  response has it (recent models report it), else ``None``.
  https://platform.openai.com/docs/api-reference/chat/object
* OpenAI Responses: ``usage.input_tokens``,
  ``usage.input_tokens_details.cached_tokens``, ``usage.output_tokens``; in a
  stream, the ``response.completed`` event's ``response.usage``.
  https://platform.openai.com/docs/api-reference/responses/object
* DeepSeek: ``prompt_cache_hit_tokens`` (read) and
  ``prompt_cache_miss_tokens``; ``prompt_tokens`` is their sum.
  https://api-docs.deepseek.com/guides/kv_cache
* Anthropic (also on Bedrock InvokeModel and Vertex AI): ``usage.input_tokens``
  (tokens after the last breakpoint), ``cache_read_input_tokens``,
  ``cache_creation_input_tokens``, ``output_tokens``; the prompt is the sum of
  the three input figures. In a stream, ``message_start``'s
  ``message.usage`` and then ``message_delta``'s ``usage`` (later figures
  replace earlier ones). https://docs.claude.com/en/docs/build-with-claude/prompt-caching
  With server-side compaction ``usage.iterations`` lists every sampling
  iteration (the top-level figures are the last one's); the figures are
  summed over the iterations, which is what was billed.
* Gemini: ``usageMetadata.promptTokenCount`` (includes the cached part),
  ``cachedContentTokenCount``, ``candidatesTokenCount`` plus
  ``thoughtsTokenCount``; in a stream, the last chunk that carries it.
  https://ai.google.dev/api/generate-content#UsageMetadata
* Bedrock Converse: ``usage.inputTokens``, ``cacheReadInputTokens``,
  ``cacheWriteInputTokens``, ``outputTokens``; like Anthropic the prompt is
  the sum of the three input figures.
  https://docs.aws.amazon.com/bedrock/latest/APIReference/API_runtime_TokenUsage.html

>>> from_response("anthropic-messages", "application/json",
...               b'{"usage":{"input_tokens":5,"cache_read_input_tokens":100,"cache_creation_input_tokens":0,"output_tokens":7}}')
{'prompt': 105, 'cache_read': 100, 'cache_write': 0, 'output': 7, 'source': 'json'}
"""

from __future__ import annotations

import base64
import json
import re
import zlib
from collections.abc import Iterator
from typing import Any

from ..errors import InputError

__all__ = ["from_response", "decode_body", "usage_of", "http_status", "Usage"]

Usage = dict  # {"prompt", "cache_read", "cache_write", "output", "source"}


def http_status(value: Any) -> int | None:
    """A recorded HTTP status: an integer, its digits, or vcrpy's
    ``{"code": 200, "message": "OK"}``; ``None`` for anything else."""
    if isinstance(value, dict):
        value = value.get("code")
    if isinstance(value, str) and value.strip().isdigit():
        value = int(value)
    return value if isinstance(value, int) and not isinstance(value, bool) and 100 <= value <= 599 else None


def _int(v: Any) -> int | None:
    return v if isinstance(v, int) and not isinstance(v, bool) else None


def _sum(*values: int | None) -> int | None:
    known = [v for v in values if v is not None]
    return sum(known) if known else None


def usage_of(obj: Any) -> dict[str, int | None] | None:
    """The figures of one JSON object that carries usage (a response, a
    stream event, a chunk), or ``None`` when it carries none."""
    if not isinstance(obj, dict):
        return None
    if obj.get("type") == "message_start" and isinstance(obj.get("message"), dict):
        return usage_of(obj["message"])
    if obj.get("type") in ("response.completed", "response.done", "response.incomplete") \
            and isinstance(obj.get("response"), dict):
        return usage_of(obj["response"])
    meta = obj.get("usageMetadata")
    if isinstance(meta, dict):
        output = _sum(_int(meta.get("candidatesTokenCount")), _int(meta.get("thoughtsTokenCount")))
        return {"prompt": _int(meta.get("promptTokenCount")), "cache_read": _int(meta.get("cachedContentTokenCount")) or 0,
                "cache_write": None, "output": output}
    u = obj.get("usage")
    if not isinstance(u, dict):
        # Bedrock metrics event of an invoke stream
        metrics = obj.get("amazon-bedrock-invocationMetrics")
        if isinstance(metrics, dict) and _int(metrics.get("inputTokenCount")) is not None:
            return {"prompt": _int(metrics.get("inputTokenCount")), "cache_read": _int(metrics.get("cacheReadInputTokenCount")),
                    "cache_write": _int(metrics.get("cacheWriteInputTokenCount")), "output": _int(metrics.get("outputTokenCount"))}
        return None
    if "inputTokens" in u or "cacheReadInputTokens" in u:  # Bedrock Converse
        read, write = _int(u.get("cacheReadInputTokens")), _int(u.get("cacheWriteInputTokens"))
        return {"prompt": _sum(_int(u.get("inputTokens")), read, write), "cache_read": read or 0,
                "cache_write": write or 0, "output": _int(u.get("outputTokens"))}
    if "prompt_tokens" in u or "prompt_cache_hit_tokens" in u:  # Chat Completions, DeepSeek
        details = u.get("prompt_tokens_details")
        read = _int(u.get("prompt_cache_hit_tokens"))
        if read is None and isinstance(details, dict):
            read = _int(details.get("cached_tokens"))
        prompt = _int(u.get("prompt_tokens"))
        if prompt is None:
            prompt = _sum(read, _int(u.get("prompt_cache_miss_tokens")))
        write = _int(details.get("cache_write_tokens")) if isinstance(details, dict) else None
        return {"prompt": prompt, "cache_read": read if read is not None else 0, "cache_write": write,
                "output": _int(u.get("completion_tokens"))}
    if "input_tokens_details" in u or ("input_tokens" in u and "cache_read_input_tokens" not in u
                                       and "cache_creation_input_tokens" not in u and "output_tokens_details" in u):
        details = u.get("input_tokens_details")  # Responses
        read = _int(details.get("cached_tokens")) if isinstance(details, dict) else None
        write = _int(details.get("cache_write_tokens")) if isinstance(details, dict) else None
        return {"prompt": _int(u.get("input_tokens")), "cache_read": read if read is not None else 0,
                "cache_write": write, "output": _int(u.get("output_tokens"))}
    if "input_tokens" in u or "output_tokens" in u or "cache_read_input_tokens" in u:  # Anthropic
        iterations = u.get("iterations")
        if isinstance(iterations, list) and iterations and all(isinstance(it, dict) for it in iterations):
            # server-side compaction: each sampling iteration is billed; the
            # top-level figures describe the last one only
            parts = [usage_of({"usage": {k: v for k, v in it.items() if k != "iterations"}}) for it in iterations]
            found = [p for p in parts if p is not None]
            if found:
                return {k: _sum(*(p[k] for p in found)) for k in ("prompt", "cache_read", "cache_write", "output")}
        read, write = _int(u.get("cache_read_input_tokens")), _int(u.get("cache_creation_input_tokens"))
        inp = _int(u.get("input_tokens"))
        return {"prompt": _sum(inp, read, write) if inp is not None else None, "cache_read": read,
                "cache_write": write, "output": _int(u.get("output_tokens"))}
    return None


def _merge(into: dict[str, int | None] | None, new: dict[str, int | None]) -> dict[str, int | None]:
    """Later stream figures replace earlier ones; a figure a later event
    leaves out (Anthropic's ``message_delta`` without input figures) stays."""
    if into is None:
        return dict(new)
    out = dict(into)
    for k, v in new.items():
        if v is not None:
            out[k] = v
    return out


def _events(body: bytes) -> Iterator[Any]:
    """JSON objects of an event stream: SSE ``data:`` lines, or the
    base64 ``bytes`` payloads of an AWS event stream (Bedrock)."""
    if b'"bytes":"' in body and not body.lstrip().startswith(b"data:"):
        for m in re.finditer(rb'"bytes":"([A-Za-z0-9+/=]+)"', body):
            try:
                yield json.loads(base64.b64decode(m.group(1)))
            except (ValueError, RecursionError):
                continue
        # Converse streams carry plain JSON payloads ({"metrics":..,"usage":..})
        for m in re.finditer(rb'\{"metrics":.*?"usage":\{[^{}]*\}\}', body):
            try:
                yield json.loads(m.group(0))
            except (ValueError, RecursionError):
                continue
        return
    for line in body.splitlines():
        line = line.strip()
        if not line.startswith(b"data:"):
            continue
        data = line[5:].strip()
        if not data or data == b"[DONE]":
            continue
        try:
            yield json.loads(data)
        except (ValueError, RecursionError):
            continue


def decode_body(body: bytes, content_encoding: str | None = None) -> bytes:
    """``body`` without its content encoding (gzip, deflate, br; several
    comma-separated codings are undone last first). A gzip body is also
    recognised by its magic bytes when the header is missing.
    :class:`InputError` when the bytes are not what the header says or
    ``br`` needs a package that is not installed."""
    codings = [c.strip().lower() for c in (content_encoding or "").split(",") if c.strip()]
    if not codings and body[:2] == b"\x1f\x8b":
        codings = ["gzip"]
    for coding in reversed(codings):
        try:
            if coding in ("gzip", "x-gzip"):
                body = zlib.decompress(body, 47)  # gzip or zlib header
            elif coding == "deflate":
                try:
                    body = zlib.decompress(body)
                except zlib.error:
                    body = zlib.decompress(body, -15)  # raw deflate, as some servers send
            elif coding == "br":
                body = _brotli(body)
            elif coding in ("identity", ""):
                continue
            else:
                raise InputError(f"unsupported content encoding {coding!r}")
        except zlib.error as exc:
            raise InputError(f"body is not valid {coding} data: {exc}") from None
    return body


def _brotli(body: bytes) -> bytes:
    try:
        import brotli
    except ImportError:
        try:
            import brotlicffi as brotli  # type: ignore[no-redef, unused-ignore]  # either package may be absent
        except ImportError:
            raise InputError("a br (brotli) encoded body needs the brotli package (pip install brotli)") from None
    try:
        return brotli.decompress(body)  # type: ignore[no-any-return]
    except Exception as exc:  # brotli.error has no stable import path across the two packages
        raise InputError(f"body is not valid br data: {exc}") from None


def from_response(dialect_or_provider: str | None, content_type: str | None, body_bytes: bytes | None) -> dict[str, Any] | None:
    """The usage a response reported (see the module docstring), or ``None``.

    ``dialect_or_provider`` names who answered (``anthropic-messages``,
    ``openai``...; only used to document the call, the figures are read from
    the shapes themselves); ``content_type`` picks stream or JSON parsing
    (the bytes decide when it is missing). Never raises on malformed bytes:
    a response it cannot read reported nothing it can use.
    """
    if not body_bytes:
        return None
    body = bytes(body_bytes)
    if body[:2] == b"\x1f\x8b":
        try:
            body = decode_body(body, "gzip")
        except InputError:
            return None
    ctype = (content_type or "").lower()
    head = body.lstrip()[:1]
    streamish = ("event-stream" in ctype or "eventstream" in ctype or body.lstrip().startswith((b"event:", b"data:"))
                 or (head not in (b"{", b"[") and b'"bytes":"' in body))
    if not streamish and head in (b"{", b"["):
        try:
            obj = json.loads(body.decode("utf-8", "surrogatepass"))
        except (ValueError, RecursionError, UnicodeDecodeError):
            obj = None
        if isinstance(obj, list):  # Gemini REST stream without alt=sse: a JSON array of chunks
            found = None
            for chunk in obj:
                u = usage_of(chunk)
                if u is not None:
                    found = _merge(found, u)
            return {**found, "source": "sse"} if found else None
        u = usage_of(obj)
        return {**u, "source": "json"} if u else None
    found = None
    for event in _events(body):
        u = usage_of(event)
        if u is None and isinstance(event, dict) and isinstance(event.get("usage"), dict) \
                and event.get("type") == "message_delta":
            u = usage_of({"usage": event["usage"]})
        if u is not None:
            found = _merge(found, u)
    if found is None:
        return None
    if found.get("prompt") is None and found.get("cache_read") is None:
        return None
    return {**found, "source": "sse"}
