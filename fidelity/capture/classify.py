"""Is a recorded HTTP request a model generation request? If not, why not.

:func:`classify` sorts requests by URL, method, content type and body, so
importers and folder commands skip embeddings, uploads, telemetry... with a
count and a reason.

>>> classify("POST", "https://api.openai.com/v1/embeddings", {}, b'{"model":"m","input":"x"}').reason
'embeddings'
>>> classify("POST", "https://api.openai.com/v1/chat/completions", {}, b'{"model":"m","messages":[]}').generation
True
>>> classify("POST", "https://router.huggingface.co/v1/chat/completions", {}, b'{"model":"m","messages":[]}').generation
True
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any
from urllib.parse import unquote, urlsplit

from ..traffic.exchange import header

__all__ = ["Classified", "classify", "GENERATION", "body_kind"]


@dataclass(frozen=True)
class Classified:
    """``generation``: a model request fidelity reads; else ``reason`` says
    what the request is (a short label, used to count skips)."""

    generation: bool
    reason: str


GENERATION = Classified(True, "generation")

#: path patterns of non-generation endpoints -> reason (searched in the URL-decoded path)
_PATHS: tuple[tuple[str, str], ...] = (
    (r"embed(ding)?s?\b|:(batch)?[eE]mbedContents?$|:embedText", "embeddings"),
    (r"/moderations\b", "moderation"),
    (r"/files\b|/uploads\b|/upload/", "file upload or download"),
    (r"count_tokens|:countTokens$|/input_tokens\b", "token counting"),
    (r"/cachedContents\b", "cache management"),
    (r"/audio/|/images/|:predict$|/realtime\b", "audio, image or realtime API"),
    (r"/batches\b|/fine_tuning\b|/vector_stores\b|/assistants\b|/threads\b", "batch or assistants API"),
    (r"/v1/traces\b|/v1/metrics\b|/v1/logs\b|/telemetry\b|/collect\b|/track\b|/e\b|/ingest", "telemetry"),
)
_HOSTS: tuple[tuple[str, str], ...] = (
    (r"(^|\.)(sentry\.io|segment\.io|posthog\.com|datadoghq\.com|honeycomb\.io|langfuse\.com|"
     r"smith\.langchain\.com|api\.traceloop\.com|logfire-api\.pydantic\.dev|statsig\.com)$", "telemetry"),
    (r"(^|\.)(huggingface\.co|hf\.co)$", "model hub download"),
)
_GENERATION_KEYS = ("messages", "contents", "input", "prompt")
_CHAT_PATH = re.compile(r"/(chat/completions|responses|messages)$")


def body_kind(body: bytes) -> str:
    """``json``, ``multipart``, ``form``, ``empty`` or ``binary``: what a body is, from its bytes."""
    head = body.lstrip()[:1]
    if not body.strip():
        return "empty"
    if head in (b"{", b"["):
        return "json"
    if body.startswith(b"--"):
        return "multipart"
    if re.match(rb"^[\w.%-]+=[^&\s]*(&[\w.%-]+=[^&\s]*)*$", body[:2000]):
        return "form"
    return "binary"


def classify(method: str, url: str | None, headers: Mapping[str, Any] | Iterable[tuple[str, Any]],
             body: bytes | None, obj: Any = None) -> Classified:
    """Sort one request (``obj``: its parsed JSON body when the caller has it)."""
    method = (method or "POST").upper()
    body = body or b""
    path = host = ""
    if url:
        try:
            parts = urlsplit(url)
            path, host = unquote(parts.path), (parts.hostname or "").lower()
        except ValueError:
            pass
    for pattern, reason in _HOSTS:
        # Hugging Face's inference router serves chat as an OpenAI-compatible API
        # (https://huggingface.co/docs/inference-providers/index): not a download
        if re.search(pattern, host) and not (host.startswith(("router.", "api-inference.")) and _CHAT_PATH.search(path)):
            return Classified(False, reason)
    ctype = (header(headers, "content-type") or "").lower()
    if "multipart/" in ctype or body_kind(body) == "multipart":
        return Classified(False, "multipart upload")
    for pattern, reason in _PATHS:
        if re.search(pattern, path):
            return Classified(False, reason)
    if method in ("GET", "HEAD", "DELETE", "OPTIONS"):
        return Classified(False, f"{method} request (no model request body)")
    if not body.strip():
        return Classified(False, "no request body")
    kind = body_kind(body)
    if kind != "json":
        return Classified(False, f"{kind} body, not JSON")
    if obj is None:
        import json

        try:
            obj = json.loads(body.decode("utf-8", "surrogatepass"))
        except (ValueError, RecursionError):
            return Classified(False, "body is not valid JSON")
    if not isinstance(obj, dict) or not any(k in obj for k in _GENERATION_KEYS):
        return Classified(False, "JSON body without messages, contents, input or prompt")
    if "prompt" in obj and not any(k in obj for k in ("messages", "contents", "input")):
        return Classified(False, "legacy completions (prompt) request")
    return GENERATION
