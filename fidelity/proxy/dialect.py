"""Which wire dialect a request that reached the proxy or the scripted
upstream speaks: one function both call, so that the upstream predicts a
request's usage under the same cache rules the proxy judges it by.

The evidence is weighed by :func:`fidelity.wire.evidence.detect_request`
(the URL when its host is a known provider's, else the body's marks), then
the API path decides when the host is not a known provider's (a local or
third-party endpoint): ``/v1/messages`` is Anthropic Messages even when the
body would also pass for DeepSeek. On the Chat Completions path the
OpenAI-compatible dialects (DeepSeek, DashScope, vLLM, SGLang) keep what
the body marks say: a Qwen Code request to a local ``/v1/chat/completions``
is read as ``dashscope``, whose cache view puts the system text ahead of
the tools, by the proxy and by the upstream alike.
"""

from __future__ import annotations

from typing import Any
from urllib.parse import urlsplit

from ..errors import FidelityError

__all__ = ["dialect_of_path", "request_dialect", "KNOWN_HOSTS"]

#: host name parts of the providers whose URL outranks the path
KNOWN_HOSTS = ("openai", "anthropic", "google", "deepseek", "aliyuncs")
_CHAT_COMPATIBLE = frozenset(("deepseek", "dashscope", "vllm", "sglang"))


def dialect_of_path(path: str) -> str | None:
    """The API a request path belongs to (``None``: not one the scripted
    upstream serves)."""
    p = path.rstrip("/")
    if p.endswith("/chat/completions"):
        return "openai-chat"
    if p.endswith("/responses"):
        return "openai-responses"
    if p.endswith("/messages/count_tokens"):
        return "anthropic-count"
    if p.endswith("/messages"):
        return "anthropic-messages"
    if ":generateContent" in p or ":streamGenerateContent" in p:
        return "gemini"
    return None


def _known_host(url: str) -> bool:
    try:
        host = urlsplit(url).hostname or ""
    except ValueError:
        return False
    return any(h in host for h in KNOWN_HOSTS)


def request_dialect(url: str, obj: Any) -> str | None:
    """The dialect of a request sent to ``url`` (full URL, path included)
    whose parsed body is ``obj``; ``None`` when nothing identifies it."""
    from .. import providers
    from ..wire.evidence import detect_request

    try:
        found: str | None = detect_request(obj, url=url).dialect
    except FidelityError:  # the body says nothing: a known provider's URL still does
        try:
            endpoint = providers.from_url(url)
        except (FidelityError, ValueError):
            endpoint = None
        found = endpoint.dialect if endpoint is not None else None
    except ValueError:  # a URL that does not parse
        return None
    try:
        path = urlsplit(url).path
    except ValueError:
        return found
    by_path = dialect_of_path(path)
    if by_path in (None, "anthropic-count") or found == by_path or _known_host(url):
        return found
    if by_path == "openai-chat" and found in _CHAT_COMPATIBLE:
        return found  # OpenAI-compatible dialects share the chat path; the body marks say which
    return by_path
