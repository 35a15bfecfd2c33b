"""The builder reads a new element's bytes off the body as sent where they
are the bytes it would write (a compact body whose layout is known)."""

from __future__ import annotations

from typing import Any

import orjson
import pytest

from fidelity import wire
from fidelity.cache import builder
from fidelity.cache.items import build_view, dumps_value
from fidelity.cache.prompts import _Body
from fidelity.wire import spans

_OBJ = {"model": "gpt-4.1", "messages": [{"role": "system", "content": "be brief"},
                                         {"role": "user", "content": "é \\ \" x", "n": 1.5}],
        "tools": [{"type": "function", "function": {"name": "grep", "parameters": {"type": "object"}}}]}


def _record(raw: bytes) -> Any:
    d = wire.get("openai-chat")
    return _Body(d, "openai", "gpt-4.1", orjson.loads(raw), raw)


def test_a_known_compact_body_is_sliced_not_serialised(monkeypatch: pytest.MonkeyPatch) -> None:
    raw = orjson.dumps(_OBJ)
    spans.parsed(raw)  # the cache view's parse lays the body out
    rec = _record(raw)
    items = build_view(rec.dialect, rec.body).items
    want = [dumps_value(it.value) for it in items]
    written: list[Any] = []
    monkeypatch.setattr(builder, "dumps_value", lambda v: written.append(v) or dumps_value(v))
    assert builder._element_bytes(rec, items) == want
    assert len(items) == 3 and written == []  # every element of a top-level array: sliced


def test_otherwise_each_element_is_serialised(monkeypatch: pytest.MonkeyPatch) -> None:
    spaced = orjson.dumps(_OBJ, option=orjson.OPT_INDENT_2)  # not compact: no layout
    unseen = orjson.dumps({**_OBJ, "max_tokens": 7})  # compact, but never laid out
    for raw in (spaced, unseen):
        rec = _record(raw)
        items = build_view(rec.dialect, rec.body).items
        assert builder._element_bytes(rec, items) == [dumps_value(it.value) for it in items]
    assert spans.known_members(unseen) is None  # the builder made no pass over it
    # a value that is not the parsed element (an edited copy) is serialised, not sliced
    raw = orjson.dumps(_OBJ)
    spans.parsed(raw)
    rec = _record(raw)
    items = build_view(rec.dialect, rec.body).items
    edited = [it._replace(value={**it.value, "content": "changed"}) if it.kind == "message" else it for it in items]
    assert builder._element_bytes(rec, edited) == [dumps_value(it.value) for it in edited]
