"""The memo of cache views: dialects that view bodies alike share entries,
and an entry is the dialect's own view."""

from __future__ import annotations

from typing import Any

import orjson

from fidelity import wire
from fidelity.cache import whole_view
from fidelity.wire.dashscope import DASHSCOPE
from fidelity.wire.openai_chat import OPENAI_CHAT
from fidelity.wire.vllm import SGLANG, VLLM

_BODY = orjson.dumps({
    "model": "Qwen/Qwen3-8B", "chat_template_kwargs": {"enable_thinking": False},
    "messages": [{"role": "system", "content": "be brief"}, {"role": "user", "content": "hi"}],
    "tools": [{"type": "function", "function": {"name": "grep", "parameters": {"type": "object"}}}],
})


def test_vllm_and_sglang_share_one_view_others_keep_their_own(monkeypatch: Any) -> None:
    monkeypatch.setattr(whole_view, "_VIEWS", {})
    computed: list[str] = []
    real = wire.cache_view_at

    def counted(d: Any, body: bytes, endpoint: str | None = None) -> Any:
        computed.append(d.name)
        return real(d, body, endpoint)

    monkeypatch.setattr(whole_view.wire, "cache_view_at", counted)
    vllm, sglang, dashscope, chat = VLLM, SGLANG, DASHSCOPE, OPENAI_CHAT
    assert vllm.view_key == sglang.view_key
    assert len({d.view_key for d in (vllm, dashscope, chat)}) == 3
    for d in (vllm, sglang, dashscope, chat, sglang, vllm):
        assert whole_view.view_of(d, _BODY) == real(d, _BODY)
    assert computed == ["vllm", "dashscope", "openai-chat"]
    assert whole_view.view_of(dashscope, _BODY) != whole_view.view_of(chat, _BODY)  # other settings, other views
