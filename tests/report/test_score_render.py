"""The report's render memo (``score._Scorer.render``): one rendering per
request written alike, and each request's own bytes, never an equal
request's written otherwise."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from fidelity import pricing, score, wire
from fidelity.model import FrozenDict, Message, Request, Route, Text


def _request(**params: Any) -> Request:
    return Request(Route("openai", "gpt-4o"), messages=(Message("user", (Text("hi"),)),), params=FrozenDict(params))


def test_equal_requests_written_otherwise_keep_their_own_bytes() -> None:
    scorer = score._Scorer(pricing.load(), [])
    chat = wire.get("openai-chat")
    for a, b in [(_request(temperature=1), _request(temperature=1.0)), (_request(x=0.0), _request(x=-0.0)),
                 (_request(x=1, y=2), _request(y=2, x=1)), (_request(seed=1), _request(seed=True))]:
        assert a == b
        assert scorer.render(a, "openai-chat") == chat.render(a)
        assert scorer.render(b, "openai-chat") == chat.render(b) != chat.render(a)


def test_a_request_written_alike_is_rendered_once(monkeypatch: Any) -> None:
    scorer = score._Scorer(pricing.load(), [])
    chat = wire.get("openai-chat")
    calls: list[Request] = []
    real = type(chat).render
    monkeypatch.setattr(type(chat), "render", lambda self, r: calls.append(r) or real(self, r))
    a = _request(temperature=0.5)
    b = replace(a, messages=(Message("user", (Text("hi"),)),))  # equal, alike, another object
    assert scorer.render(a, "openai-chat") == scorer.render(b, "openai-chat") == real(chat, a)
    assert calls == [a]
    c = replace(a, messages=(Message("user", (Text("ho"),)),))
    assert scorer.render(c, "openai-chat") == real(chat, c) and calls == [a, c]
