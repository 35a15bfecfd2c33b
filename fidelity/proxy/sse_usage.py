"""The usage a provider reported, read from a JSON reply or from a stream's
events as they pass, in bounded memory.

Where each provider puts its figures (the same places ``../shared/real``'s
recorded traffic shows):

* OpenAI Chat Completions: ``usage.prompt_tokens`` and
  ``usage.prompt_tokens_details.cached_tokens``; streamed, in the final
  chunk when the client asked ``stream_options.include_usage``
  (https://platform.openai.com/docs/api-reference/chat/object). DeepSeek
  adds ``prompt_cache_hit_tokens`` / ``prompt_cache_miss_tokens``
  (https://api-docs.deepseek.com/guides/kv_cache).
* OpenAI Responses: ``usage.input_tokens`` and
  ``usage.input_tokens_details.cached_tokens``; streamed, in the
  ``response.completed`` event's ``response``
  (https://platform.openai.com/docs/api-reference/responses/object).
* Anthropic Messages: ``usage.input_tokens`` (uncached),
  ``cache_read_input_tokens``, ``cache_creation_input_tokens``; streamed,
  in ``message_start``'s ``message.usage``, with output counts in
  ``message_delta``'s ``usage``
  (https://platform.claude.com/docs/en/build-with-claude/streaming).
* Gemini: ``usageMetadata.promptTokenCount`` (cached included) and
  ``cachedContentTokenCount``; every streamed chunk carries the running
  figures, the last one the final
  (https://ai.google.dev/api/generate-content#UsageMetadata).

:class:`UsageReader` is fed the response bytes chunk by chunk (already
decompressed); it keeps at most one event (``max_event`` bytes) of a
stream and at most ``max_body`` bytes of a JSON reply, so a long stream
costs no memory.
"""

from __future__ import annotations

import zlib
from dataclasses import dataclass, field
from typing import Any

import orjson

__all__ = ["Usage", "UsageReader", "usage_of", "Decoder"]


@dataclass
class Usage:
    """Prompt figures in one shape for every provider.

    ``prompt``: every prompt token (cached ones included); ``cached``: read
    from the provider's cache; ``written``: stored by this request where the
    provider reports it (Anthropic ``cache_creation_input_tokens``);
    ``output``: generated tokens; ``raw``: the provider's own usage object(s),
    merged in arrival order.
    """

    format: str
    prompt: int | None = None
    cached: int | None = None
    written: int | None = None
    output: int | None = None
    raw: dict[str, Any] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        return {"format": self.format, "prompt_tokens": self.prompt, "cached_tokens": self.cached,
                "cache_write_tokens": self.written, "output_tokens": self.output, "raw": self.raw}


def _int(v: Any) -> int | None:
    return v if isinstance(v, int) and not isinstance(v, bool) else None


def usage_of(obj: Any) -> Usage | None:
    """The usage in one parsed reply or stream event, or ``None``."""
    if not isinstance(obj, dict):
        return None
    t = obj.get("type")
    if t == "message_start" and isinstance(obj.get("message"), dict):
        return _anthropic(obj["message"].get("usage"))
    if t == "message_delta":
        return _anthropic(obj.get("usage"))
    if isinstance(t, str) and t.startswith("response.") and isinstance(obj.get("response"), dict):
        return _responses(obj["response"].get("usage"))
    if isinstance(obj.get("usageMetadata"), dict):
        m = obj["usageMetadata"]
        return Usage("gemini", _int(m.get("promptTokenCount")), _int(m.get("cachedContentTokenCount")) or 0,
                     None, _int(m.get("candidatesTokenCount")), dict(m))
    u = obj.get("usage")
    if not isinstance(u, dict):
        return None
    if t == "message" or "cache_read_input_tokens" in u or "cache_creation_input_tokens" in u:
        return _anthropic(u)
    if "input_tokens" in u and "prompt_tokens" not in u:
        return _responses(u)
    return _chat(u)


def _anthropic(u: Any) -> Usage | None:
    if not isinstance(u, dict):
        return None
    read = _int(u.get("cache_read_input_tokens"))
    made = _int(u.get("cache_creation_input_tokens"))
    plain = _int(u.get("input_tokens"))
    steps = u.get("iterations")
    if isinstance(steps, list) and steps and all(isinstance(s, dict) for s in steps):
        # server-side compaction runs several model calls for one reply and
        # reports each in ``usage.iterations`` (the top level is the last
        # call's); the reply's figures are their sums (recorded in
        # ../shared/real: pydantic-ai test_anthropic_compaction_usage_with_cache_streaming)
        read = sum(_int(s.get("cache_read_input_tokens")) or 0 for s in steps)
        made = sum(_int(s.get("cache_creation_input_tokens")) or 0 for s in steps)
        plain = sum(_int(s.get("input_tokens")) or 0 for s in steps)
    prompt = None if plain is None else plain + (read or 0) + (made or 0)
    return Usage("anthropic", prompt, read, made, _int(u.get("output_tokens")), dict(u))


def _responses(u: Any) -> Usage | None:
    if not isinstance(u, dict):
        return None
    details = u.get("input_tokens_details")
    details = details if isinstance(details, dict) else {}
    return Usage("openai-responses", _int(u.get("input_tokens")), _int(details.get("cached_tokens")), None,
                 _int(u.get("output_tokens")), dict(u))


def _chat(u: dict[str, Any]) -> Usage:
    details = u.get("prompt_tokens_details")
    details = details if isinstance(details, dict) else {}
    cached = _int(details.get("cached_tokens"))
    if cached is None:
        cached = _int(u.get("prompt_cache_hit_tokens"))  # DeepSeek
    return Usage("openai-chat", _int(u.get("prompt_tokens")), cached, None, _int(u.get("completion_tokens")), dict(u))


def _merge(old: Usage | None, new: Usage | None) -> Usage | None:
    """Later figures win where they are given (Anthropic's ``message_delta``
    repeats output counts; its input counts, when present, are final)."""
    if new is None:
        return old
    if old is None:
        return new
    for name in ("prompt", "cached", "written", "output"):
        value = getattr(new, name)
        if value is not None and not (name == "prompt" and new.format == "anthropic" and value == 0 and old.prompt):
            setattr(old, name, value)
    old.raw.update(new.raw)
    return old


class Decoder:
    """Incremental ``Content-Encoding`` decoder for the usage reader (the
    proxy forwards the encoded bytes untouched). ``gzip`` and ``deflate``
    are decoded; any other coding (``br``, ``zstd``) turns usage reading off."""

    def __init__(self, encoding: str | None) -> None:
        enc = (encoding or "identity").strip().lower()
        self.ok = enc in ("", "identity", "gzip", "x-gzip", "deflate")
        self._z = zlib.decompressobj(47) if enc in ("gzip", "x-gzip", "deflate") else None

    def feed(self, data: bytes) -> bytes:
        if not self.ok:
            return b""
        if self._z is None:
            return data
        try:
            return self._z.decompress(data)
        except zlib.error:
            self.ok = False
            return b""


class UsageReader:
    """Reads usage from a reply as it passes. ``stream``: the reply is SSE
    (``text/event-stream``); else a JSON body (or a JSON array of chunks,
    Gemini's non-SSE stream)."""

    def __init__(self, *, stream: bool, max_event: int = 1 << 20, max_body: int = 32 << 20) -> None:
        self.stream = stream
        self.max_event = max_event
        self.max_body = max_body
        self.usage: Usage | None = None
        self.events = 0
        self._buf = bytearray()
        self._data = bytearray()
        self._skipping = False
        self._overflow = False

    def feed(self, data: bytes) -> None:
        if not self.stream:
            if len(self._buf) + len(data) > self.max_body:
                self._overflow = True
                self._buf.clear()
            if not self._overflow:
                self._buf += data
            return
        self._buf += data
        while True:
            nl = self._buf.find(b"\n")
            if nl < 0:
                if len(self._buf) > self.max_event:  # a huge line: drop it, keep reading after it
                    self._buf.clear()
                    self._skipping = True
                return
            line = bytes(self._buf[:nl]).rstrip(b"\r")
            del self._buf[: nl + 1]
            if self._skipping:
                self._skipping = False
                self._data.clear()
                continue
            self._line(line)

    def _line(self, line: bytes) -> None:
        if not line:
            self._dispatch()
        elif line.startswith(b"data:"):
            chunk = line[5:]
            if chunk.startswith(b" "):
                chunk = chunk[1:]
            if len(self._data) + len(chunk) <= self.max_event:
                if self._data:
                    self._data += b"\n"
                self._data += chunk
            else:
                self._data.clear()

    def _dispatch(self) -> None:
        if not self._data:
            return
        data = bytes(self._data)
        self._data.clear()
        self.events += 1
        if data.strip() == b"[DONE]":
            return
        try:
            obj = orjson.loads(data)
        except orjson.JSONDecodeError:
            return
        self.usage = _merge(self.usage, usage_of(obj))

    def close(self) -> Usage | None:
        """The final usage (``None`` when the reply reported none)."""
        if self.stream:
            if self._buf and not self._skipping:
                self._line(bytes(self._buf).rstrip(b"\r"))
            self._buf.clear()
            self._dispatch()
            return self.usage
        if self._overflow or not self._buf:
            return None
        try:
            obj = orjson.loads(bytes(self._buf))
        except orjson.JSONDecodeError:
            return None
        finally:
            self._buf.clear()
        if isinstance(obj, list):  # Gemini's JSON-array stream: the last chunk's figures are final
            for item in obj:
                self.usage = _merge(self.usage, usage_of(item))
            return self.usage
        return usage_of(obj)
