"""SDK conformance across client versions: what each openai-python major
version and the anthropic SDK (``messages.create`` and ``messages.stream()``)
put on the wire, against fidelity's parse / render and client profiles.

For each generated call the SDK's own bytes ``b`` must satisfy
``render(parse(b)) == b`` (the parsed body remembers how it was written),
and rendering the parsed request from canonical data with the client's
profile (no original bytes) must give ``b`` again.

The system Python runs this file against the installed SDKs; ``.ci/sdk-matrix``
runs it once more in one virtual environment per openai major version the
package index serves (``FIDELITY_SDK_MATRIX=openai-N``): 0.x is driven over a
loopback HTTP server (it posts with ``requests``), 1.x to 3.x through an
``httpx.MockTransport``. Each property runs 300 examples.
"""

from __future__ import annotations

import dataclasses
import http.server
import inspect
import json
import os
import threading
from collections.abc import Iterator
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from fidelity import wire
from fidelity.wire.profiles import profile

openai = pytest.importorskip("openai")
MATRIX = os.environ.get("FIDELITY_SDK_MATRIX")  # set by .ci/sdk-matrix inside a venv
MAJOR = int(openai.__version__.split(".")[0])
PROFILE = "openai-python>=3" if MAJOR >= 3 else "openai-python<3" if MAJOR >= 1 else "openai-python<1"
EXAMPLES = settings(max_examples=300, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])

_text = st.text(st.characters(blacklist_categories=("Cs",), max_codepoint=0x2FFF), max_size=10)
_name = st.from_regex(r"[a-z][a-z0-9_]{0,8}", fullmatch=True)
_schema = st.fixed_dictionaries({"type": st.just("object"), "properties": st.dictionaries(
    _name, st.fixed_dictionaries({"type": st.sampled_from(["string", "integer"])}), max_size=3)})


# ------------------------------------------------------------------ capture


_CAPTURED: list[bytes] = []
_CHAT_REPLY = {"id": "c", "object": "chat.completion", "created": 0, "model": "m",
               "choices": [{"index": 0, "finish_reason": "stop", "message": {"role": "assistant", "content": "ok"}}]}


def _httpx_client() -> Any:
    import httpx

    def handler(request: Any) -> Any:
        _CAPTURED.append(request.content)
        return httpx.Response(200, json=_CHAT_REPLY)

    return openai.OpenAI(api_key="sk-test", base_url="https://api.openai.com/v1", max_retries=0,
                         http_client=httpx.Client(transport=httpx.MockTransport(handler)))


class _Handler(http.server.BaseHTTPRequestHandler):
    def do_POST(self) -> None:  # noqa: N802 - http.server's name
        length = int(self.headers.get("Content-Length") or 0)
        _CAPTURED.append(self.rfile.read(length))
        data = json.dumps(_CHAT_REPLY).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, *args: Any) -> None:
        pass


@pytest.fixture(scope="module")
def loopback() -> Iterator[str]:
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}/v1"
    server.shutdown()


@pytest.fixture(scope="module")
def chat_call(loopback: str) -> Any:
    """``call(**kwargs) -> bytes``: the body this SDK version posts for a chat completion."""
    if MAJOR == 0:
        def call(**kwargs: Any) -> bytes:
            _CAPTURED.clear()
            openai.ChatCompletion.create(api_key="sk-test", api_base=loopback, **kwargs)
            return _CAPTURED[-1]
        return call
    client = _httpx_client()

    def call(**kwargs: Any) -> bytes:
        _CAPTURED.clear()
        client.chat.completions.create(**kwargs)
        return _CAPTURED[-1]
    return call


def _kwargs_known(fn: Any) -> set[str]:
    try:
        return set(inspect.signature(fn).parameters)
    except (TypeError, ValueError):
        return set()


# ------------------------------------------------------------------ strategies


@st.composite
def chat_kwargs(draw: Any, known: set[str] | None) -> dict[str, Any]:
    n = draw(st.integers(1, 4))
    messages: list[dict[str, Any]] = []
    if draw(st.booleans()):
        messages.append({"role": "system", "content": draw(_text)})
    for i in range(n):
        role = "user" if i % 2 == 0 else "assistant"
        if role == "user" and draw(st.booleans()):
            content: Any = [{"type": "text", "text": draw(_text)}]
        else:
            content = draw(_text)
        messages.append({"role": role, "content": content})
    kw: dict[str, Any] = {"model": draw(st.sampled_from(["gpt-4o", "gpt-4.1-mini"])), "messages": messages}
    optional = {
        "temperature": st.floats(0, 2, allow_nan=False).map(lambda x: round(x, 3)),
        "max_tokens": st.integers(1, 4096), "seed": st.integers(0, 2**31), "top_p": st.sampled_from([0.5, 1, 1.0]),
        "user": _text, "stop": st.lists(_text, min_size=1, max_size=2), "n": st.just(1),
        "tools": st.lists(st.builds(lambda name, desc, params: {"type": "function", "function": {
            "name": name, "description": desc, "parameters": params}}, _name, _text, _schema),
            min_size=1, max_size=2, unique_by=lambda t: t["function"]["name"]),
        "parallel_tool_calls": st.booleans(), "response_format": st.just({"type": "json_object"}),
        "presence_penalty": st.sampled_from([0, 0.5]), "logprobs": st.booleans(),
    }
    for key in draw(st.lists(st.sampled_from(sorted(optional)), unique=True, max_size=5)):
        if known is not None and key not in known:
            continue
        kw[key] = draw(optional[key])
    if "tools" in kw and draw(st.booleans()):
        kw["tool_choice"] = "auto"
    if "parallel_tool_calls" in kw and "tools" not in kw:
        del kw["parallel_tool_calls"]
    return kw


@st.composite
def responses_kwargs(draw: Any, known: set[str]) -> dict[str, Any]:
    items: Any = draw(st.one_of(_text, st.lists(st.builds(
        lambda role, text: {"role": role, "content": text}, st.sampled_from(["user", "assistant"]), _text),
        min_size=1, max_size=3)))
    kw: dict[str, Any] = {"model": "gpt-5-mini", "input": items}
    optional = {
        "instructions": _text, "max_output_tokens": st.integers(16, 4096), "temperature": st.sampled_from([0, 0.7]),
        "store": st.booleans(), "user": _text, "metadata": st.dictionaries(_name, _text, max_size=2),
        "tools": st.lists(st.builds(lambda n, p: {"type": "function", "name": n, "parameters": p, "strict": False},
                                    _name, _schema), min_size=1, max_size=2, unique_by=lambda t: t["name"]),
        "reasoning": st.just({"effort": "low"}), "prompt_cache_key": _name,
    }
    for key in draw(st.lists(st.sampled_from(sorted(optional)), unique=True, max_size=5)):
        if key in known:
            kw[key] = draw(optional[key])
    return kw


# ------------------------------------------------------------------ openai


def _check(dialect_name: str, body: bytes) -> None:
    d = wire.get(dialect_name)
    req = d.parse(body)
    assert d.render(req) == body  # the parsed body remembers how it was written
    fresh = dataclasses.replace(req, layout=profile(PROFILE, dialect_name))
    assert d.render(fresh) == body, (PROFILE, body[:200])  # and the client profile writes what the SDK wrote


@EXAMPLES
@given(data=st.data())
def test_openai_chat_completions(chat_call: Any, data: st.DataObject) -> None:
    known = None if MAJOR == 0 else _kwargs_known(_httpx_client().chat.completions.create)
    kwargs = data.draw(chat_kwargs(known))
    if MAJOR == 0:
        # 0.x posts json.dumps(kwargs): the caller's order; the profile writes
        # the v3 literal's order, so call in that order (parse keeps any order)
        from fidelity.wire._openai_common import CHAT_KEYS, sdk_ordered

        kwargs = sdk_ordered(kwargs, CHAT_KEYS)
    _check("openai-chat", chat_call(**kwargs))


@pytest.mark.skipif(MAJOR == 0, reason="openai 0.x has no Responses API")
@EXAMPLES
@given(data=st.data())
def test_openai_responses(data: st.DataObject) -> None:
    client = _httpx_client()
    if not hasattr(client, "responses"):
        pytest.skip(f"openai {openai.__version__} has no Responses API")
    kwargs = data.draw(responses_kwargs(_kwargs_known(client.responses.create)))
    _CAPTURED.clear()
    try:
        client.responses.create(**kwargs)
    except Exception:  # noqa: BLE001 - the reply is a chat completion; only the request matters
        pass
    _check("openai-responses", _CAPTURED[-1])


# ------------------------------------------------------------------ anthropic

anthropic_sdk = None if MATRIX else pytest.importorskip("anthropic")


@st.composite
def anthropic_kwargs(draw: Any) -> dict[str, Any]:
    n = draw(st.integers(1, 4))
    messages = []
    for i in range(n):
        role = "user" if i % 2 == 0 else "assistant"
        if draw(st.booleans()):
            block: dict[str, Any] = {"type": "text", "text": draw(_text)}
            if draw(st.booleans()):
                block["cache_control"] = {"type": "ephemeral"}
            content: Any = [block]
        else:
            content = draw(_text) or "x"
        messages.append({"role": role, "content": content})
    kw: dict[str, Any] = {"max_tokens": draw(st.integers(1, 8192)), "messages": messages,
                          "model": draw(st.sampled_from(["claude-sonnet-4-5", "claude-haiku-4-5"]))}
    optional = {
        "system": st.one_of(_text, st.just([{"type": "text", "text": "sys", "cache_control": {"type": "ephemeral"}}])),
        "stop_sequences": st.lists(_text.filter(bool), min_size=1, max_size=2),
        "metadata": st.builds(lambda u: {"user_id": u}, _name),
        "thinking": st.just({"type": "enabled", "budget_tokens": 1024}),
        "tools": st.lists(st.builds(lambda n, d, s: {"name": n, "description": d, "input_schema": s}, _name, _text,
                                    _schema), min_size=1, max_size=2, unique_by=lambda t: t["name"]),
    }
    for key in draw(st.lists(st.sampled_from(sorted(optional)), unique=True, max_size=4)):
        kw[key] = draw(optional[key])
    if "tools" in kw and draw(st.booleans()):
        kw["tool_choice"] = {"type": "auto"}
    return kw


def _anthropic_client() -> Any:
    import httpx2 as httpx  # anthropic 2.x ships its own httpx fork and refuses httpx.Client

    reply = {"id": "msg_1", "type": "message", "role": "assistant", "model": "m", "content": [],
             "stop_reason": "end_turn", "stop_sequence": None, "usage": {"input_tokens": 1, "output_tokens": 1}}

    def handler(request: Any) -> Any:
        _CAPTURED.append(request.content)
        return httpx.Response(200, json=reply)

    return anthropic_sdk.Anthropic(api_key="x", max_retries=0,  # type: ignore[union-attr]
                                   http_client=httpx.Client(transport=httpx.MockTransport(handler)))


@pytest.mark.skipif(MATRIX is not None, reason="the anthropic SDK runs once, with the system Python")
@EXAMPLES
@given(kwargs=anthropic_kwargs())
def test_anthropic_messages_create(kwargs: dict[str, Any]) -> None:
    _CAPTURED.clear()
    _anthropic_client().messages.create(**kwargs)
    body = _CAPTURED[-1]
    d = wire.get("anthropic-messages")
    req = d.parse(body)
    assert d.render(req) == body
    assert d.render(dataclasses.replace(req, layout=profile("anthropic-create", d.name))) == body


@pytest.mark.skipif(MATRIX is not None, reason="the anthropic SDK runs once, with the system Python")
@EXAMPLES
@given(kwargs=anthropic_kwargs())
def test_anthropic_messages_stream_helper(kwargs: dict[str, Any]) -> None:
    _CAPTURED.clear()
    try:
        with _anthropic_client().messages.stream(**kwargs) as stream:
            for _ in stream:
                break
    except Exception:  # noqa: BLE001 - the mock reply is not an event stream; only the request matters
        pass
    body = _CAPTURED[-1]
    assert body.endswith(b',"stream":true}')  # the helper's own order: stream last
    d = wire.get("anthropic-messages")
    req = d.parse(body)
    assert d.render(req) == body
    assert d.render(dataclasses.replace(req, layout=profile("anthropic-stream", d.name))) == body
    # the same request through create() order differs only where the helper's literal does
    created = d.render(dataclasses.replace(req, layout=profile("anthropic-create", d.name)))
    assert json.loads(created) == json.loads(body)
