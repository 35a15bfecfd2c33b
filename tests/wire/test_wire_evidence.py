"""One decision for the dialect of a request (:func:`fidelity.wire.evidence.detect_request`):
replay's exchanges, snapshot metadata, the proxy and the scripted upstream all take it.
The cases are those where the readers used to decide differently."""

from __future__ import annotations

import orjson
from hypothesis import given
from hypothesis import strategies as st

from fidelity.capture.snapshot import from_request
from fidelity.traffic.apart import exchange
from fidelity.wire.evidence import describe_bytes, detect_request, route

#: a Chat Completions request with typed ``image`` blocks (pydantic-ai's Mistral recordings): Anthropic marks
TYPED_CHAT = {"model": "magistral-medium-latest",
              "messages": [{"role": "user", "content": [{"type": "text", "text": "what is this?"},
                                                        {"type": "image", "url": "https://x/y.png"}]}]}


def test_a_chat_path_on_an_unknown_host_is_chat_for_replay_too() -> None:
    """Replay read this request as Anthropic Messages (body marks only) while the
    proxy read it as Chat Completions (the path); now both read the path."""
    url = "https://llm-gateway.example.com/v1/chat/completions"
    body = orjson.dumps(TYPED_CHAT)
    ex = exchange("x", 0, body, url=url)
    assert (ex.dialect, ex.provider, ex.model) == ("openai-chat", "openai", "magistral-medium-latest")
    found = detect_request(TYPED_CHAT, url=url)
    assert found.conflict is not None and "anthropic-messages" in found.conflict
    assert describe_bytes(url, body)[0] == "openai-chat"


def test_snapshot_metadata_takes_the_path_rule() -> None:
    """A body no dialect recognises, sent to a local Responses path: the snapshot
    is filed under the path's dialect (it used to carry no provider, while the
    proxy filed it under ``openai-responses``)."""
    snap = from_request(method="POST", url="http://127.0.0.1:9/v1/responses", headers={},
                        body=b'{"model": "m", "what": 1}')
    assert (snap.provider, snap.family, snap.model) == ("openai-responses", "openai", "m")


def test_url_outranks_the_recordings_hint() -> None:
    """Evidence strongest first: a provider's URL decides over the dialect a
    recording names (replay used to take the hint first)."""
    body = {"model": "deepseek-chat", "messages": [{"role": "user", "content": "hi"}]}
    assert route(body, "https://api.deepseek.com/chat/completions", "vllm") == ("deepseek", "deepseek",
                                                                                 "deepseek-chat")
    assert route(body, None, "vllm") == ("vllm", "vllm", "deepseek-chat")


def test_nothing_tells() -> None:
    assert route({"x": 1}, "https://example.com/v1/other") == (None, None, None)
    assert route(None, None, model="m") == (None, None, "m")
    assert route({"contents": []}, "http://127.0.0.1:1/v1beta/models/gemini-x:generateContent")[2] == "gemini-x"


HOSTS = ["http://127.0.0.1:8090", "https://api.mistral.ai", "https://api.openai.com", "https://api.deepseek.com",
         "https://openrouter.ai/api", "https://dashscope.aliyuncs.com/compatible-mode"]
PATHS = ["/v1/chat/completions", "/v1/responses", "/v1/messages", "/v1beta/models/m:generateContent", "/v1/other"]
BODIES = [{"model": "qwen3-coder-plus", "messages": [{"role": "user", "content": "hi"}]},
          {"model": "gpt-4o", "messages": [{"role": "user", "content": "hi"}]},
          {"model": "claude-x", "max_tokens": 5, "messages": [{"role": "user", "content": "hi"}]},
          TYPED_CHAT, {"model": "gpt-4o", "input": "hi"}, {"contents": [{"parts": [{"text": "hi"}]}]}, {"x": 1}]


# ci profile: 200 derandomized examples
@given(st.sampled_from(HOSTS), st.sampled_from(PATHS), st.sampled_from(BODIES))
def test_the_dialect_is_chosen_by_evidence_order(host: str, path: str, obj: dict[str, object]) -> None:
    """Whatever the host, path and body: a chat-shaped body sent to a Chat
    Completions path is never read as the Responses API or Gemini, and a
    request to a ``/responses`` or ``/messages`` path of a host no provider
    route names is read as that path's API."""
    dialect = route(obj, host + path)[0]
    if path == "/v1/chat/completions" and "messages" in obj:
        assert dialect not in ("openai-responses", "gemini")
    if host.startswith("http://127.0.0.1") or "mistral" in host:
        if path == "/v1/responses":
            assert dialect == "openai-responses"
        if path == "/v1/messages":
            assert dialect == "anthropic-messages"


_BLOCKS = st.sampled_from([{"type": "text", "text": "x"}, {"type": "image", "source": {"type": "url", "url": "u"}},
                           {"type": "tool_result", "tool_use_id": "t", "content": "r"}, {"type": "image_url"}])


@st.composite
def _known_url_requests(draw: st.DrawFn) -> tuple[str, dict[str, object]]:
    url = draw(st.sampled_from(["https://api.openai.com/v1/chat/completions", "https://api.deepseek.com/chat/completions",
                                "https://dashscope.aliyuncs.com/compatible-mode/v1/chat/completions",
                                "https://api.anthropic.com/v1/messages"]))
    body: dict[str, object] = {}
    if draw(st.booleans()):
        body["max_tokens"] = 5
    body["model"] = draw(st.sampled_from(["gpt-4o", "deepseek-chat", "qwen3-coder-plus", "claude-x"]))
    if draw(st.booleans()):
        body["system"] = "s"
    if draw(st.booleans()):
        body["tools"] = [draw(st.sampled_from([{"name": "t", "input_schema": {}},
                                               {"type": "function", "function": {"name": "t"}}]))]
    body["messages"] = [{"role": "user", "content": draw(st.one_of(st.just("hi"), st.lists(_BLOCKS, max_size=3)))}]
    return url, body


# ci profile: 200 derandomized examples
@given(_known_url_requests())
def test_over_a_providers_url_only_the_requests_own_keys_count(case: tuple[str, dict[str, object]]) -> None:
    """What ``tools`` and the messages hold does not move a request off its
    provider's URL: ``fidelity scan`` stands placeholders in for them where a
    log line repeats the line before, and must route it as the whole line."""
    url, body = case
    cut = {k: (-7.78e-300 if k == "tools" else [-7.77e-300] if k == "messages" else v) for k, v in body.items()}
    assert route(body, url) == route(cut, url)
