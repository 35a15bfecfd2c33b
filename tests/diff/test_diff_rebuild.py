"""The partly fixed child (:func:`fidelity.diff._rebuild.fixed_child`) reads
only the containers a fixed break owns a slot of; every other byte is the
child's, unread."""

from __future__ import annotations

from typing import Any

import orjson
import pytest

from fidelity import wire
from fidelity.diff import _rebuild
from fidelity.diff.breaks import _align


def _tool(name: str) -> dict[str, Any]:
    return {"type": "function", "function": {"name": name, "parameters": {"type": "object"}}}


def test_a_tools_fix_leaves_the_messages_unread(monkeypatch: pytest.MonkeyPatch) -> None:
    messages = [{"role": "system", "content": "s"}, {"role": "user", "content": "hi"},
                {"role": "assistant", "content": "yes"}]
    parent = orjson.dumps({"model": "gpt-4o", "tools": [_tool("a"), _tool("b")], "messages": messages})
    child = orjson.dumps({"model": "gpt-4o", "tools": [_tool("b"), _tool("a")], "messages": messages})
    view = wire.get("openai-chat")
    slots, groups = _align(view.cache_view(parent), view.cache_view(child))
    assert groups
    read: list[str] = []
    element = _rebuild._element

    def spy(body: bytes, ptr: str, spans: Any) -> bytes:
        read.append(ptr)
        return element(body, ptr, spans)

    monkeypatch.setattr(_rebuild, "_element", spy)
    fixed = _rebuild.fixed_child(parent, child, slots, set(range(len(groups))))
    assert fixed == parent  # the tools as the parent sends them, the rest the child's (the same)
    assert read and all(ptr.startswith("/tools/") for ptr in read), read
