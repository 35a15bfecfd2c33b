"""vLLM and SGLang OpenAI-compatible servers through the openai SDK:
:mod:`.openai_chat`'s bytes plus server fields
(https://docs.vllm.ai/en/latest/serving/openai_compatible_server.html,
https://docs.sglang.ai/); the cache view in the chat template's order with
ChatML text (docs/wire-openai.md).
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
