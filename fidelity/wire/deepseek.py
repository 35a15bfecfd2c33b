"""DeepSeek Chat Completions (``https://api.deepseek.com``), called through
the openai SDK with ``base_url`` and ``extra_body``.

Wire bytes: identical to :mod:`.openai_chat` (same SDK); DeepSeek adds
``reasoning_content`` on assistant messages and the ``thinking`` toggle, which
the SDK sends from ``extra_body`` after the SDK-known keys. Source:
https://api-docs.deepseek.com/guides/thinking_mode ("When using Chat
Completion with the OpenAI SDK to set the thinking parameter, you need to
pass the thinking parameter within extra_body"; thinking toggle
``{"thinking": {"type": "enabled/disabled"}}``, effort ``reasoning_effort``;
``reasoning_content`` is returned at the same level as ``content`` and must
be passed back in tool-call turns).

Cache view: DeepSeek's context cache matches the repeated prompt prefix
(https://api-docs.deepseek.com/guides/kv_cache: "Only the repeated prefix part
between requests can trigger a cache hit"), and the prefix is the
chat-template rendering, where the system text comes first, then the tool
block, then the turns. ``Segment.text`` is the DeepSeek V4 rendering with
DSML tool calls fitted on recorded usage (:func:`deepseek_v4_texts`,
docs/calibration.md); :func:`deepseek_v4_prompt` and
:func:`deepseek_v4_reply` give a whole prompt and a generated reply as the
model reads them. Cache-key parameters: ``model``,
``thinking`` and ``reasoning_effort`` (they change the rendered template),
``tool_choice``, ``response_format``.
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
