"""vLLM and SGLang OpenAI-compatible servers (``/v1/chat/completions``),
called through the openai SDK with ``base_url`` and ``extra_body``.

Wire bytes: identical to :mod:`.openai_chat`. Server-specific fields
(``chat_template_kwargs``, ``top_k``, ``repetition_penalty``...) travel in
``extra_body`` and land after the SDK-known keys. Sources:
https://docs.vllm.ai/en/latest/serving/openai_compatible_server.html (extra
parameters "can be passed ... via extra_body", including
``chat_template_kwargs``), https://docs.sglang.ai/ (OpenAI-compatible API).

Cache view: both servers apply the model's chat template and cache the
resulting token prefix (vLLM automatic prefix caching hashes full KV blocks;
SGLang's RadixAttention matches a radix tree of token prefixes), so the order
is the template's: system text, then tools, then the turns. fidelity renders
the ChatML / Qwen3 template text (the most common family served); other
families get ``text=None``. Cache-key parameters: ``model``,
``chat_template_kwargs`` (e.g. ``enable_thinking``, changes the rendered
prompt), ``tool_choice``, ``response_format``.
"""

from __future__ import annotations

from typing import Any

from . import register
from ._template import chatml_texts
from .openai_chat import ChatDialect

__all__ = ["LocalServerDialect", "VLLM", "SGLANG"]


class LocalServerDialect(ChatDialect):
    def detect(self, obj: Any) -> bool:
        """Only bodies with ``chat_template_kwargs`` are claimed (otherwise a
        vLLM body is indistinguishable from an OpenAI one)."""
        return super().detect(obj) and "chat_template_kwargs" in obj


_KEYS = ("model", "chat_template_kwargs", "tool_choice", "response_format")

VLLM = register(LocalServerDialect(name="vllm", provider="vllm", priority=5, cache_keys=_KEYS,
                                   cache_order="template", templater=chatml_texts))
SGLANG = register(LocalServerDialect(name="sglang", provider="sglang", priority=4, cache_keys=_KEYS,
                                     cache_order="template", templater=chatml_texts))
