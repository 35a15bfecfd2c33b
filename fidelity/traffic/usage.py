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
* Groq: the Chat Completions figures, in a stream under the final chunk's
  ``x_groq.usage`` instead of ``usage``.
  https://console.groq.com/docs/api-reference#chat-create
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
from ..gzipped import gunzip

__all__ = ["from_response", "decode_body", "usage_of", "cache_report", "http_status", "normalise", "Decoder", "StreamReader",
           "FIELDS"]

#: the members of the usage convention besides ``source``
FIELDS = ("prompt", "cache_read", "cache_write", "output")


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
    if obj.get("type") == "message_delta" and isinstance(obj.get("usage"), dict):
        return usage_of({"usage": obj["usage"]})
    groq = obj.get("x_groq")
    if not isinstance(obj.get("usage"), dict) and isinstance(groq, dict) and isinstance(groq.get("usage"), dict):
        return usage_of({"usage": groq["usage"]})
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


def cache_report(response: Any) -> tuple[int, int, str] | None:
    """``(prompt, cached, where)`` of a response whose server reported a
    cached-token figure, read by :func:`usage_of` (``where`` names the
    field); ``None`` when it reported none (a server that does not report
    cache reads, told apart from one that read nothing: ``fidelity probe``
    needs the difference). Also reads llama.cpp's ``timings.cache_n``
    (https://github.com/ggml-org/llama.cpp/blob/master/tools/server/README.md),
    which carries no usage object of its own."""
    if not isinstance(response, dict):
        return None
    raw = response.get("usage")
    u = raw if isinstance(raw, dict) else {}
    got = usage_of(response) if u else None
    if got is not None and got["prompt"] is not None and got["cache_read"] is not None:
        if _int(u.get("prompt_cache_hit_tokens")) is not None:  # DeepSeek
            return got["prompt"], got["cache_read"], "usage.prompt_cache_hit_tokens"
        details = u.get("prompt_tokens_details")
        if isinstance(details, dict) and _int(details.get("cached_tokens")) is not None:  # OpenAI, vLLM, SGLang
            return got["prompt"], got["cache_read"], "usage.prompt_tokens_details.cached_tokens"
    timings = response.get("timings")
    if isinstance(timings, dict) and _int(timings.get("cache_n")) is not None:
        prompt = _int(u.get("prompt_tokens"))
        n = timings["cache_n"] + int(timings.get("prompt_n") or 0)
        return (prompt if prompt is not None else n), timings["cache_n"], "timings.cache_n"
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
            # within fidelity.gzipped's limits: a recorded body can be a bomb too
            if coding in ("gzip", "x-gzip"):
                body = gunzip(body, wbits=47)  # gzip or zlib header
            elif coding == "deflate":
                try:
                    body = gunzip(body, wbits=15)
                except InputError:
                    body = gunzip(body, wbits=-15)  # raw deflate, as some servers send
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
        if u is not None:
            found = _merge(found, u)
    return _final(found)


def _final(found: dict[str, int | None] | None) -> dict[str, Any] | None:
    if found is None or (found.get("prompt") is None and found.get("cache_read") is None):
        return None
    return {**found, "source": "sse"}


def normalise(value: Any, source: str = "log") -> dict[str, Any] | None:
    """A logged or stored ``usage`` member in the convention: the
    convention's dict (kept), the proxy's earlier ``{"format",
    "prompt_tokens", ..., "raw"}`` (read from ``raw``), or a provider's own
    usage object (read as :func:`usage_of` reads it); ``None`` when it
    holds no prompt figure."""
    if not isinstance(value, dict):
        return None
    if "prompt" in value or "cache_read" in value:
        out: dict[str, Any] = {k: _int(value.get(k)) for k in FIELDS}
        out["source"] = value["source"] if isinstance(value.get("source"), str) else source
    else:
        raw = value.get("raw") if isinstance(value.get("raw"), dict) and "format" in value else value
        found = usage_of({"usage": raw}) or usage_of(raw) or usage_of({"usageMetadata": raw})
        if found is None:
            return None
        out = {**found, "source": source}
    return out if out["prompt"] is not None else None


class Decoder:
    """Incremental ``Content-Encoding`` decoder for :class:`StreamReader`
    (the proxy forwards the encoded bytes untouched). ``gzip`` and
    ``deflate`` are decoded; any other coding (``br``, ``zstd``) turns usage
    reading off."""

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


class StreamReader:
    """:func:`from_response` for a reply read as it passes, in bounded
    memory: fed the (decoded) bytes chunk by chunk, it keeps at most one
    event (``max_event`` bytes) of a stream and at most ``max_body`` bytes
    of a JSON reply. ``stream``: the reply is SSE; else a JSON body (or a
    JSON array of chunks, Gemini's non-SSE stream). Each event is read by
    :func:`usage_of`, as :func:`from_response` reads it."""

    def __init__(self, *, stream: bool, max_event: int = 1 << 20, max_body: int = 32 << 20) -> None:
        self.stream = stream
        self.max_event = max_event
        self.max_body = max_body
        self.events = 0
        self._found: dict[str, int | None] | None = None
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
            obj = json.loads(data)
        except (ValueError, RecursionError):
            return
        u = usage_of(obj)
        if u is not None:
            self._found = _merge(self._found, u)

    def close(self) -> dict[str, Any] | None:
        """The usage in the convention (``None`` when the reply reported none)."""
        if self.stream:
            if self._buf and not self._skipping:
                self._line(bytes(self._buf).rstrip(b"\r"))
            self._buf.clear()
            self._dispatch()
            return _final(self._found)
        if self._overflow or not self._buf:
            return None
        body = bytes(self._buf)
        self._buf.clear()
        return from_response(None, "application/json", body)
