"""DeepSeek Chat Completions through the openai SDK: :mod:`.openai_chat`'s
bytes plus ``reasoning_content`` and ``thinking``
(https://api-docs.deepseek.com/guides/thinking_mode); the cache view in the
chat template's order with the fitted DeepSeek V4 text
(https://api-docs.deepseek.com/guides/kv_cache; docs/calibration.md).
"""

from __future__ import annotations

from typing import Any

from . import register
from ._template import deepseek_v4_prompt, deepseek_v4_reply, deepseek_v4_texts
from .openai_chat import ChatDialect

__all__ = ["BASE_URL", "DEEPSEEK", "DeepSeekDialect", "deepseek_v4_texts", "deepseek_v4_prompt", "deepseek_v4_reply"]

#: DeepSeek's documented base URL (https://api-docs.deepseek.com/).
BASE_URL = "https://api.deepseek.com"


class DeepSeekDialect(ChatDialect):
    def detect(self, obj: Any) -> bool:
        """Chat body that carries ``thinking``, ``reasoning_content`` on an
        assistant message, or a ``deepseek`` model name."""
        if not super().detect(obj):
            return False
        if "thinking" in obj or "deepseek" in obj["model"].lower():
            return True
        return any(isinstance(m, dict) and "reasoning_content" in m for m in obj["messages"])


DEEPSEEK = register(DeepSeekDialect(
    name="deepseek", provider="deepseek", priority=10,
    cache_keys=("model", "thinking", "reasoning_effort", "tool_choice", "response_format"),
    cache_order="template", templater=deepseek_v4_texts,
))
