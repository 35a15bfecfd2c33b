"""fidelity.breakpoints: placements applied to a whole request."""

from __future__ import annotations

import pytest

from fidelity import breakpoints, fixtures, wire
from fidelity.errors import UnknownName

HISTORY = fixtures.load().sessions[0].history


def _markers(request):
    blocks = [i for i, b in enumerate(request.system) if b.cache_control is not None]
    parts = [(i, j) for i, m in enumerate(request.messages) for j, p in enumerate(m.parts)
             if getattr(p, "cache_control", None) is not None]
    return blocks, parts, "cache_control" in request.params


def test_claude_code_marks_system_and_last_two_messages():
    placed = breakpoints.place(HISTORY, "claude-code", "anthropic")
    blocks, parts, top = _markers(placed)
    n = len(placed.messages)
    assert blocks == [len(placed.system) - 1] and not top
    assert sorted({i for i, _ in parts}) == [n - 2, n - 1]
    assert HISTORY == fixtures.load().sessions[0].history  # input unchanged


def test_automatic_none_and_system_only():
    auto = breakpoints.place(HISTORY, "automatic", "anthropic")
    assert _markers(auto) == ([], [], True)
    body = wire.get("anthropic-messages").render(auto)
    assert body.count(b'"cache_control"') == 1
    assert _markers(breakpoints.place(HISTORY, "none", "anthropic")) == ([], [], False)
    assert _markers(breakpoints.place(HISTORY, "system-only", "dashscope"))[0] == [len(HISTORY.system) - 1]
    # no top-level marker outside Anthropic
    assert _markers(breakpoints.place(HISTORY, "automatic", "dashscope")) == ([], [], False)


def test_other_providers_untouched_and_unknown_placement():
    assert breakpoints.place(HISTORY, "none", "openai") is HISTORY
    with pytest.raises(UnknownName):
        breakpoints.place(HISTORY, "everywhere", "anthropic")
