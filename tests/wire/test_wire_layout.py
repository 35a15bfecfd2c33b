"""A parsed body remembers how it was written (fidelity.wire.layout): the round
trip is exact for any client's spelling, and an edited request keeps the
original bytes wherever its data did not change."""

from __future__ import annotations

import dataclasses
import json
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from fidelity import wire
from fidelity.errors import InputError
from fidelity.model import Message, Text
from fidelity.wire.layout import Written, merge_order, same_value
from fidelity.wire.profiles import default_profile, profile, profile_names

# -- strategies: bodies of each dialect written the way different clients write them

_text = st.text(st.characters(blacklist_categories=("Cs",)), max_size=12)
_scalar = st.one_of(st.none(), st.booleans(), st.integers(-10**6, 10**6),
                    st.floats(allow_nan=False, allow_infinity=False, width=32), _text)
_json_value = st.recursive(_scalar, lambda c: st.lists(c, max_size=3) | st.dictionaries(_text, c, max_size=3),
                           max_leaves=8)
#: (item separator, key separator, ensure_ascii): compact SDKs, json.dumps defaults, odd spacing
_style = st.sampled_from([(",", ":", False), (", ", ": ", True), (", ", ": ", False), (",", ": ", False),
                          (" , ", " : ", True)])


def _dump(obj: Any, style: tuple[str, str, bool]) -> bytes:
    item, key, ea = style
    return json.dumps(obj, separators=(item, key), ensure_ascii=ea).encode("utf-8")


@st.composite
def chat_bodies(draw: Any) -> dict[str, Any]:
    messages = [{"role": draw(st.sampled_from(["system", "user", "assistant"])), "content": draw(_text)}
                for _ in range(draw(st.integers(1, 4)))]
    if draw(st.booleans()):  # another client's per-message key order
        messages = [{"content": m["content"], "role": m["role"]} for m in messages]
    fields = {"model": draw(st.sampled_from(["gpt-4o", "deepseek-chat", "qwen-plus"])), "messages": messages}
    for k in draw(st.lists(st.sampled_from(["temperature", "max_tokens", "stream", "user", "zzz_extra"]),
                           unique=True, max_size=4)):
        fields[k] = draw(st.one_of(st.integers(0, 4096), st.floats(0, 2, allow_nan=False), st.booleans(), _text))
    keys = draw(st.permutations(list(fields)))  # any top-level order a client might use
    return {k: fields[k] for k in keys}


@st.composite
def anthropic_bodies(draw: Any) -> dict[str, Any]:
    content = draw(st.one_of(_text, st.just([{"type": "text", "text": "x", "cache_control": {"type": "ephemeral"}}])))
    fields: dict[str, Any] = {"max_tokens": draw(st.integers(1, 8192)), "messages": [{"role": "user", "content": content}],
                              "model": "claude-sonnet-4-5"}
    if draw(st.booleans()):
        fields["system"] = draw(_text)
    if draw(st.booleans()):
        fields["temperature"] = draw(st.sampled_from([0, 0.5, 1.0, 1]))
    keys = draw(st.permutations(list(fields)))
    body = {k: fields[k] for k in keys}
    if draw(st.booleans()):
        body["stream"] = True  # .stream() puts it last
    return body


@st.composite
def gemini_bodies(draw: Any) -> dict[str, Any]:
    body: dict[str, Any] = {"contents": [{"role": "user", "parts": [{"text": draw(_text)}]}]}
    if draw(st.booleans()):
        body["generationConfig"] = {"temperature": draw(st.sampled_from([0, 1, 0.7])),
                                    "thinkingConfig": {"includeThoughts": True}}
    if draw(st.booleans()):
        body["systemInstruction"] = {"parts": [{"text": draw(_text)}]}
    return body


# -- the round trip


@settings(max_examples=300)
@given(body=chat_bodies(), style=_style)
def test_chat_round_trip_any_client(body: dict[str, Any], style: tuple[str, str, bool]) -> None:
    raw = _dump(body, style)
    d = wire.get("openai-chat")
    assert d.render(d.parse(raw)) == raw


@settings(max_examples=300)
@given(body=anthropic_bodies(), style=_style)
def test_anthropic_round_trip_any_client(body: dict[str, Any], style: tuple[str, str, bool]) -> None:
    raw = _dump(body, style)
    d = wire.get("anthropic-messages")
    assert d.render(d.parse(raw)) == raw


@settings(max_examples=300)
@given(body=gemini_bodies(), style=_style)
def test_gemini_round_trip_any_client(body: dict[str, Any], style: tuple[str, str, bool]) -> None:
    raw = _dump(body, style)
    d = wire.get("gemini")
    assert d.render(d.parse(raw, model="gemini-2.5-flash")) == raw


@settings(max_examples=300)
@given(value=_json_value, style=_style)
def test_written_reproduces_any_json_object(value: Any, style: tuple[str, str, bool]) -> None:
    obj = {"v": value, "w": [value]}
    raw = _dump(obj, style)
    assert Written.of(raw).write(obj) == raw


def test_pretty_printed_body_round_trips_and_extends() -> None:
    obj = {"model": "m", "messages": [{"role": "user", "content": "hi"}]}
    raw = json.dumps(obj, indent=2).encode()
    d = wire.get("openai-chat")
    req = d.parse(raw)
    assert d.render(req) == raw
    child = dataclasses.replace(req, messages=req.messages + (Message("user", (Text("more"),)),))
    out = d.render(child)
    assert json.loads(out)["messages"][-1] == {"role": "user", "content": "more"}
    assert out.startswith(raw[: raw.index(b"}")])  # the first message's bytes are kept


# -- edits keep the original bytes where the data did not change


@settings(max_examples=300)
@given(body=chat_bodies(), style=_style, extra=_text)
def test_appended_message_keeps_the_parent_prefix(body: dict[str, Any], style: tuple[str, str, bool],
                                                  extra: str) -> None:
    raw = _dump(body, style)
    d = wire.get("openai-chat")
    req = d.parse(raw)
    child = dataclasses.replace(req, messages=req.messages + (Message("user", (Text(extra),)),))
    out = d.render(child)
    assert json.loads(out)["messages"][:-1] == body["messages"]
    # everything up to the end of the parent's last message is byte-identical
    last = json.dumps(body["messages"][-1], separators=style[:2], ensure_ascii=style[2]).encode()
    cut = raw.index(b"[", raw.index(b'"messages"'))
    end = raw.index(last, cut) + len(last)
    assert out[:end] == raw[:end]
    # the new message is written in the parent's separators and escaping (a
    # body without non-ASCII text does not show its escaping: the current SDK's)
    shown = Written.of(raw).ensure_ascii
    assert _dump({"role": "user", "content": extra}, (style[0], style[1], bool(shown))) in out


def test_new_top_level_key_goes_where_the_renderer_puts_it() -> None:
    raw = b'{"messages":[{"role":"user","content":"x"}],"model":"gpt-4o","stream":true}'
    d = wire.get("openai-chat")
    req = d.parse(raw).with_params(temperature=0.5)
    # after the last-placed key that precedes it in the renderer's order (stream)
    assert d.render(req) == b'{"messages":[{"role":"user","content":"x"}],"model":"gpt-4o","stream":true,"temperature":0.5}'


def test_merge_order_and_same_value() -> None:
    assert merge_order(["b", "a"], ["a", "c", "b"]) == ["b", "a", "c"]
    assert merge_order(["b", "a"], ["c", "a", "b"]) == ["c", "b", "a"]
    assert merge_order([], ["x", "y"]) == ["x", "y"]
    assert same_value(1, 1.0) and not same_value(True, 1) and not same_value({"a": 1, "b": 2}, {"b": 2, "a": 1})


def test_number_spelling_is_kept() -> None:
    raw = b'{"model":"m","messages":[],"temperature":1.0,"top_p":1E-5,"seed":10}'
    d = wire.get("openai-chat")
    assert d.render(d.parse(raw)) == raw


def test_escaping_is_kept_for_unchanged_and_followed_for_new_text() -> None:
    raw = b'{"model": "m", "messages": [{"role": "user", "content": "caf\\u00e9"}]}'
    d = wire.get("openai-chat")
    req = d.parse(raw)
    assert d.render(req) == raw
    child = dataclasses.replace(req, messages=req.messages + (Message("user", (Text("né"),)),))
    assert d.render(child).endswith(b'{"role": "user", "content": "n\\u00e9"}]}')


# -- profiles


def test_profiles_listed_in_provider_descriptors_exist() -> None:
    from fidelity import providers

    for p in providers.all_providers():
        for name in p.client_profiles:
            assert name in profile_names()
            for d in p.dialects:
                if d in wire.names():
                    profile(name, d)  # every listed profile renders each of the provider's dialects


def test_profile_orders() -> None:
    chat = wire.get("openai-chat")
    req = chat.parse(b'{"model":"gpt-4o","messages":[{"role":"user","content":"\xc3\xa9"}],"temperature":0}')
    fresh = dataclasses.replace(req, layout=None)
    assert chat.render(fresh) == b'{"model":"gpt-4o","messages":[{"role":"user","content":"\xc3\xa9"}],"temperature":0}'
    old = dataclasses.replace(req, layout=profile("openai-python<3", "openai-chat"))
    assert chat.render(old) == b'{"messages":[{"role":"user","content":"\xc3\xa9"}],"model":"gpt-4o","temperature":0}'
    v0 = dataclasses.replace(req, layout=profile("openai-python<1", "openai-chat"))
    assert chat.render(v0) == b'{"model": "gpt-4o", "messages": [{"role": "user", "content": "\\u00e9"}], "temperature": 0}'
    anth = wire.get("anthropic-messages")
    a = dataclasses.replace(anth.parse(b'{"model":"c","max_tokens":5,"messages":[],"system":"s"}'),
                            layout=profile("anthropic-stream", "anthropic-messages"))
    assert anth.render(a) == b'{"max_tokens":5,"messages":[],"model":"c","system":"s","stream":true}'
    with pytest.raises(InputError, match="does not render dialect"):
        profile("gemini-rest", "openai-chat")
    assert default_profile("gemini") == "google-genai"
