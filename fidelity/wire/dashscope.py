"""Alibaba Cloud Model Studio (DashScope), OpenAI-compatible mode, through the
openai SDK: :mod:`.openai_chat`'s bytes plus ``enable_thinking`` /
``thinking_budget`` and cache markers on content parts; the cache view in the
Qwen3 template's order (:mod:`._template`). Source:
https://www.alibabacloud.com/help/model-studio/context-cache; docs/wire-openai.md.
"""

from __future__ import annotations

from typing import Any

from . import register
from ._template import chatml_texts
from .openai_chat import ChatDialect

__all__ = ["BASE_URL", "DashScopeDialect", "DASHSCOPE"]

#: OpenAI-compatible base URL of Model Studio (Beijing region).
BASE_URL = "https://dashscope.aliyuncs.com/compatible-mode/v1"


def _has_part_cache_control(messages: list[Any]) -> bool:
    for m in messages:
        content = m.get("content") if isinstance(m, dict) else None
        if isinstance(content, list) and any(isinstance(p, dict) and "cache_control" in p for p in content):
            return True
    return False


class DashScopeDialect(ChatDialect):
    def detect(self, obj: Any) -> bool:
        """Chat body with ``enable_thinking``/``thinking_budget``, a Qwen model
        name, or ``cache_control`` on a content part."""
        if not super().detect(obj):
            return False
        if "enable_thinking" in obj or "thinking_budget" in obj:
            return True
        model = obj["model"].lower()
        return model.startswith(("qwen", "qwq")) or _has_part_cache_control(obj["messages"])


DASHSCOPE = register(DashScopeDialect(
    name="dashscope", provider="dashscope", priority=10,
    cache_keys=("model", "enable_thinking", "thinking_budget", "tool_choice",
                "parallel_tool_calls", "response_format"),
    cache_order="template", templater=chatml_texts,
))
