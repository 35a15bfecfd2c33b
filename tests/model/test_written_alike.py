"""``model.written_alike``: equal requests written alike render to the same
bytes; equal requests that a renderer writes otherwise (``1`` / ``1.0`` /
``True``, ``0.0`` / ``-0.0``, key order, another layout) are not alike."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from fidelity import wire
from fidelity.model import FrozenDict, Message, Request, Route, Text, freeze, thaw, written_alike
from fidelity.strategies import requests
from fidelity.wire.profiles import profile

_DIALECTS = ("openai-chat", "anthropic-messages", "gemini", "openai-responses")


def _rebuilt(request: Request) -> Request:
    """An equal request made of new objects throughout (its layout the same object)."""
    messages = tuple(Message(m.role, tuple(replace(p) for p in m.parts), freeze(thaw(m.extra))) for m in request.messages)
    return replace(request, system=tuple(replace(s) for s in request.system), tools=tuple(replace(t) for t in request.tools),
                   messages=messages, params=freeze(thaw(request.params)))


def _bodies(request: Request) -> list[bytes | str]:
    out: list[bytes | str] = []
    for name in _DIALECTS:
        try:
            out.append(wire.get(name).render(request))
        except Exception as exc:  # a dialect that cannot carry the request refuses it alike
            out.append(f"{type(exc).__name__}: {exc}")
    return out


@settings(max_examples=200, deadline=None)
@given(request=requests())
def test_requests_written_alike_render_alike(request: Request) -> None:
    copy = _rebuilt(request)
    assert copy == request and written_alike(copy, request) and written_alike(request, request)
    assert _bodies(copy) == _bodies(request)


_TWINS = [(1, 1.0), (1, True), (0, False), (0.0, -0.0), (2.5, 2.5000000000000004)]


@settings(max_examples=200, deadline=None)
@given(request=requests(), pair=st.sampled_from(_TWINS), key=st.sampled_from(["temperature", "seed", "top_p"]))
def test_equal_values_written_otherwise_are_not_alike(request: Request, pair: tuple[Any, Any], key: str) -> None:
    a = replace(request, params=freeze({**thaw(request.params), key: pair[0]}))
    b = replace(request, params=freeze({**thaw(request.params), key: pair[1]}))
    assert not written_alike(a, b) and not written_alike(b, a)
    if a == b:  # equal to == but written otherwise: the reason a memo keyed by == would be wrong
        assert wire.get("openai-chat").render(a) != wire.get("openai-chat").render(b)


def test_key_order_and_layout_make_equal_requests_unlike() -> None:
    base = Request(Route("openai", "gpt-4o"), messages=(Message("user", (Text("hi"),)),),
                   params=FrozenDict(x_first=0.5, x_second=10))
    swapped = replace(base, params=FrozenDict(x_second=10, x_first=0.5))
    assert swapped == base and not written_alike(swapped, base)
    chat = wire.get("openai-chat")
    assert chat.render(swapped) != chat.render(base)
    other = replace(base, layout=profile("openai-python>=3", "openai-chat"))
    assert other == base and not written_alike(other, base)
    assert written_alike(other, replace(other))
    nan = float("nan")
    assert written_alike(nan, nan) and not written_alike(nan, float("nan"))  # the same object only


@pytest.mark.parametrize(("a", "b", "alike"), [
    ((1, [2, {"a": 3}]), (1, [2, {"a": 3}]), True), ((1,), [1], False), ({"a": 1, "b": 2}, {"b": 2, "a": 1}, False),
    ("x", "x", True), (None, None, True), (-0.0, 0.0, False), (1e16, 1e16, True),
])
def test_values(a: Any, b: Any, alike: bool) -> None:
    assert written_alike(a, b) is alike
