"""What a logged response reported: prompt tokens and cache reads/writes.

The shared reader is ``fidelity.capture.usage.from_response`` (its own
issue); until it is in the package this module keeps a reader of the same
signature and uses the shared one as soon as it can be imported. The result
follows the shared snapshot convention: ``{"prompt", "cache_read",
"cache_write", "output", "source"}``, ``None`` where not reported.

Fields (provider API references): Anthropic ``usage.input_tokens`` +
``cache_read_input_tokens`` + ``cache_creation_input_tokens`` is the prompt
(https://docs.anthropic.com/en/api/messages); OpenAI Chat
``usage.prompt_tokens`` and ``prompt_tokens_details.cached_tokens``,
Responses ``usage.input_tokens`` and ``input_tokens_details.cached_tokens``
(https://platform.openai.com/docs/api-reference); DeepSeek
``prompt_cache_hit_tokens`` (https://api-docs.deepseek.com/guides/kv_cache);
Gemini ``usageMetadata.promptTokenCount`` and ``cachedContentTokenCount``.
"""

from __future__ import annotations

from typing import Any

__all__ = ["from_response", "from_usage_object", "normalise"]


def _int(v: Any) -> int | None:
    return v if isinstance(v, int) and not isinstance(v, bool) and v >= 0 else None


def from_usage_object(obj: Any, source: str = "json") -> dict[str, Any] | None:
    """The convention's dict from a response body (or its ``usage``)."""
    if not isinstance(obj, dict):
        return None
    if isinstance(obj.get("usageMetadata"), dict):
        u = obj["usageMetadata"]
        return {"prompt": _int(u.get("promptTokenCount")), "cache_read": _int(u.get("cachedContentTokenCount")) or 0,
                "cache_write": None, "output": _int(u.get("candidatesTokenCount")), "source": source}
    u = obj.get("usage")
    u = u if isinstance(u, dict) else None
    if u is None and isinstance(obj.get("message"), dict):  # Anthropic stream message_start
        u = obj["message"].get("usage")
        u = u if isinstance(u, dict) else None
    if u is None:
        return None
    if "cache_read_input_tokens" in u or "cache_creation_input_tokens" in u:
        parts = [_int(u.get(k)) or 0 for k in ("input_tokens", "cache_read_input_tokens", "cache_creation_input_tokens")]
        return {"prompt": sum(parts), "cache_read": parts[1], "cache_write": parts[2],
                "output": _int(u.get("output_tokens")), "source": source}
    if "prompt_cache_hit_tokens" in u:
        hit, miss = _int(u.get("prompt_cache_hit_tokens")) or 0, _int(u.get("prompt_cache_miss_tokens")) or 0
        return {"prompt": _int(u.get("prompt_tokens")) or hit + miss, "cache_read": hit, "cache_write": None,
                "output": _int(u.get("completion_tokens")), "source": source}
    if "prompt_tokens" in u:
        det = u.get("prompt_tokens_details")
        det = det if isinstance(det, dict) else {}
        return {"prompt": _int(u.get("prompt_tokens")), "cache_read": _int(det.get("cached_tokens")) or 0,
                "cache_write": None, "output": _int(u.get("completion_tokens")), "source": source}
    if "input_tokens" in u:
        det = u.get("input_tokens_details")
        det = det if isinstance(det, dict) else {}
        return {"prompt": _int(u.get("input_tokens")), "cache_read": _int(det.get("cached_tokens")) or 0,
                "cache_write": None, "output": _int(u.get("output_tokens")), "source": source}
    return None


def from_response(dialect_or_provider: str, content_type: str | None, body_bytes: bytes) -> dict[str, Any] | None:
    """Usage a response body reports: the one reader, :func:`fidelity.capture.usage.from_response`."""
    from ..capture.usage import from_response as shared

    return shared(dialect_or_provider, content_type, body_bytes)


def normalise(value: Any) -> dict[str, Any] | None:
    """A logged ``usage`` member: the convention's dict (kept), or a raw
    provider usage object (converted)."""
    if not isinstance(value, dict):
        return None
    if "prompt" in value or "cache_read" in value:
        out: dict[str, Any] = {k: _int(value.get(k)) for k in ("prompt", "cache_read", "cache_write", "output")}
        out["source"] = value.get("source") if isinstance(value.get("source"), str) else "log"
        return out if out["prompt"] is not None else None
    return from_usage_object({"usage": value}, "log") or from_usage_object(value, "log")
