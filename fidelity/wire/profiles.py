"""Named client profiles: what a given client sends for a request with no
original bytes to follow (``fidelity render --profile NAME``; by default the
provider's current SDK). Profiles and what each was verified against:
docs/real-traffic.md, "Client profiles". Sources for the orders: the ``body=``
dict literals of ``openai/resources/chat/completions/completions.py`` and
``openai/resources/responses/responses.py`` (each openai version),
``anthropic/resources/messages/messages.py`` (anthropic 2.14.0), and
``openai/api_requestor.py`` of openai 0.28.1 (``json.dumps(params).encode()``).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace
from typing import TYPE_CHECKING, Any

from .._registry import Registry
from ..errors import InputError
from ._openai_common import CHAT_KEYS, RESPONSES_KEYS
from .layout import ClientProfile, Written

if TYPE_CHECKING:
    from ..model import Request

__all__ = ["profile", "profile_names", "default_profile", "PROFILES", "write_request", "attach"]

#: openai 1.x / 2.x ``Completions.create`` literal (2.54.0; 1.109.1 is the same
#: without moderation, prompt_cache_options, prompt_cache_retention).
CHAT_KEYS_V2: tuple[str, ...] = (
    "messages", "model", "audio", "frequency_penalty", "function_call", "functions",
    "logit_bias", "logprobs", "max_completion_tokens", "max_tokens", "metadata",
    "modalities", "moderation", "n", "parallel_tool_calls", "prediction",
    "presence_penalty", "prompt_cache_key", "prompt_cache_options", "prompt_cache_retention",
    "reasoning_effort", "response_format", "safety_identifier", "seed", "service_tier",
    "stop", "store", "stream", "stream_options", "temperature", "tool_choice", "tools",
    "top_logprobs", "top_p", "user", "verbosity", "web_search_options",
)
#: openai 1.x / 2.x ``Responses.create`` literal (2.54.0; 1.109.1 lacks
#: context_management, moderation, prompt_cache_options, prompt_cache_retention).
RESPONSES_KEYS_V2: tuple[str, ...] = (
    "background", "context_management", "conversation", "include", "input", "instructions",
    "max_output_tokens", "max_tool_calls", "metadata", "model", "moderation",
    "parallel_tool_calls", "previous_response_id", "prompt", "prompt_cache_key",
    "prompt_cache_options", "prompt_cache_retention", "reasoning", "safety_identifier",
    "service_tier", "store", "stream", "stream_options", "temperature", "text",
    "tool_choice", "tools", "top_logprobs", "top_p", "truncation", "user",
)
#: anthropic 2.14.0 ``Messages.create`` and ``Messages.stream`` literals.
ANTHROPIC_CREATE_KEYS: tuple[str, ...] = (
    "max_tokens", "messages", "model", "cache_control", "container", "diagnostics",
    "inference_geo", "metadata", "output_config", "service_tier", "speed",
    "stop_sequences", "stream", "system", "thinking", "tool_choice", "tools",
)
ANTHROPIC_STREAM_KEYS: tuple[str, ...] = (
    "max_tokens", "messages", "model", "cache_control", "diagnostics", "inference_geo",
    "metadata", "output_config", "container", "service_tier", "speed", "stop_sequences",
    "system", "tools", "thinking", "tool_choice", "stream",
)
#: google-genai 3.6.1 top-level order (models._GenerateContentParameters_to_mldev and
#: models._GenerateContentConfig_to_mldev): the gemini renderer's order too.
GENAI_KEYS: tuple[str, ...] = (
    "contents", "systemInstruction", "safetySettings", "tools", "toolConfig", "labels",
    "cachedContent", "serviceTier", "continuationToken", "store", "generationConfig",
)

_CHAT_DIALECTS = ("openai-chat", "deepseek", "dashscope", "vllm", "sglang")

#: profile name -> {dialect: ClientProfile}
PROFILES: Registry[Mapping[str, ClientProfile]] = Registry("client profile")


def _both(name: str, chat: tuple[str, ...], responses: tuple[str, ...], verified: str, **kw: object) -> None:
    table = {d: ClientProfile(name, _CHAT_DIALECTS, chat, verified=verified, **kw) for d in _CHAT_DIALECTS}  # type: ignore[arg-type]
    table["openai-responses"] = ClientProfile(name, ("openai-responses",), responses, verified=verified, **kw)  # type: ignore[arg-type]
    PROFILES.add(name, table)


_both("openai-python>=3", CHAT_KEYS, RESPONSES_KEYS, "openai 3.57.0")
_both("openai-python<3", CHAT_KEYS_V2, RESPONSES_KEYS_V2, "openai 1.109.1, 2.54.0 (httpx 0.28.1)")
_both("openai-python<1", (), (), "openai 0.28.1", item_sep=", ", key_sep=": ", ensure_ascii=True, allow_nan=True)
PROFILES.add("anthropic-create", {"anthropic-messages": ClientProfile(
    "anthropic-create", ("anthropic-messages",), ANTHROPIC_CREATE_KEYS, verified="anthropic 2.14.0")})
PROFILES.add("anthropic-stream", {"anthropic-messages": ClientProfile(
    "anthropic-stream", ("anthropic-messages",), ANTHROPIC_STREAM_KEYS, trailing=("stream",),
    adds=(("stream", True),), verified="anthropic 2.14.0 (messages.stream helper)")})
PROFILES.add("google-genai", {"gemini": ClientProfile(
    "google-genai", ("gemini",), GENAI_KEYS, item_sep=", ", key_sep=": ", ensure_ascii=True, allow_nan=True,
    verified="google-genai 3.6.1")})
PROFILES.add("gemini-rest", {"gemini": ClientProfile(
    "gemini-rest", ("gemini",), (), verified="llm-gemini cassettes (compact json.dumps, ensure_ascii=False)")})

#: dialect -> its default profile (the current SDK)
_DEFAULT = {**{d: "openai-python>=3" for d in (*_CHAT_DIALECTS, "openai-responses")},
            "anthropic-messages": "anthropic-create", "gemini": "google-genai"}


def profile_names() -> list[str]:
    """Every registered profile name."""
    return list(PROFILES.names())


def default_profile(dialect: str) -> str:
    """The profile a dialect renders with when nothing else is asked (its current SDK)."""
    return _DEFAULT.get(dialect, "openai-python>=3")


def profile(name: str, dialect: str) -> ClientProfile:
    """The profile ``name`` for ``dialect``; :class:`InputError` when that
    client does not speak the dialect."""
    table = PROFILES.get(name)
    try:
        return table[dialect]
    except KeyError:
        raise InputError(
            f"client profile {name!r} does not render dialect {dialect!r} (it renders: {', '.join(sorted(table))})"
        ) from None


# -- writing a request in its layout (here, not in .layout: it needs the profiles) --


def write_request(request: Any, body: Mapping[str, Any], dialect: str) -> bytes:
    """Bytes of ``body`` for ``request``: in the request's own layout (the
    body it was parsed from, or the profile it was given), else in the
    dialect's default profile (its current SDK)."""
    layout = getattr(request, "layout", None)
    if layout is None:
        layout = profile(default_profile(dialect), dialect)
    return layout.write(body)


def attach(request: Request, body: bytes, obj: Any, dialect: str, *, url_keys: tuple[str, ...] = ()) -> Request:
    """``request`` remembering that it was parsed from ``body``."""
    return replace(request, layout=Written.of(body, obj, fallback=profile(default_profile(dialect), dialect),
                                              url_keys=url_keys))
