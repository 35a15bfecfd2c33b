"""Alibaba Cloud Model Studio (DashScope), OpenAI-compatible mode
(``https://dashscope.aliyuncs.com/compatible-mode/v1``), called through the
openai SDK.

Wire bytes: identical to :mod:`.openai_chat`; DashScope-specific fields go
through ``extra_body`` (``enable_thinking``, ``thinking_budget``) and explicit
cache markers ride on content parts as ``"cache_control": {"type":
"ephemeral"}``. Source: https://www.alibabacloud.com/help/model-studio/context-cache
(explicit cache "Manually enable to create caches for specific content",
5-minute validity, minimum 1024 tokens; implicit cache caches "common
prefixes", minimum 256 tokens; applies to "the OpenAI Chat Completions and
DashScope APIs"). The response reports cache use in
``usage.prompt_tokens_details.cached_tokens`` (and
``cache_creation_input_tokens`` for explicit cache) per the same page.

Cache view: Qwen models read the ChatML / Qwen3 chat template, in which the
system text comes first, then the ``# Tools`` block, then the turns (see
:mod:`._template`). Cache-key parameters: ``model``, ``enable_thinking`` and
``thinking_budget`` (the Qwen3 template renders the thinking toggle),
``tool_choice``, ``parallel_tool_calls``, ``response_format``.
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
