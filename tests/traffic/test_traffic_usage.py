"""The one usage parser (fidelity.traffic.usage): fields no reader took
before, and the shapes a stored usage member can have."""

from __future__ import annotations

import orjson
from hypothesis import given
from hypothesis import strategies as st

from fidelity.traffic.usage import StreamReader, from_response, normalise

# Groq streams put the final figures under x_groq.usage, not usage
# (https://console.groq.com/docs/api-reference#chat-create)
GROQ_SSE = (
    b'data: {"id":"c","object":"chat.completion.chunk","choices":[{"index":0,"delta":{"content":"hi"}}]}\n\n'
    b'data: {"id":"c","object":"chat.completion.chunk","choices":[{"index":0,"delta":{},"finish_reason":"stop"}],'
    b'"x_groq":{"id":"req_1","usage":{"queue_time":0.01,"prompt_tokens":321,"prompt_time":0.002,'
    b'"completion_tokens":9,"total_tokens":330}}}\n\ndata: [DONE]\n\n'
)


def test_groq_stream_usage_is_read() -> None:
    got = from_response("openai-chat", "text/event-stream", GROQ_SSE)
    assert got == {"prompt": 321, "cache_read": 0, "cache_write": None, "output": 9, "source": "sse"}


@given(st.lists(st.integers(min_value=0, max_value=len(GROQ_SSE)), max_size=12))
def test_groq_stream_read_as_it_passes_gives_the_same(cuts: list[int]) -> None:
    r = StreamReader(stream=True)
    last = 0
    for c in sorted(set(cuts)):
        r.feed(GROQ_SSE[last:c])
        last = c
    r.feed(GROQ_SSE[last:])
    assert r.close() == from_response(None, "text/event-stream", GROQ_SSE)


def test_a_plain_usage_member_wins_over_x_groq() -> None:
    body = orjson.dumps({"usage": {"prompt_tokens": 5, "completion_tokens": 1},
                         "x_groq": {"usage": {"prompt_tokens": 999, "completion_tokens": 1}}})
    assert from_response(None, "application/json", body)["prompt"] == 5


def test_normalise_reads_every_stored_shape() -> None:
    convention = {"prompt": 100, "cache_read": 64, "cache_write": 0, "output": 3, "source": "json"}
    assert normalise(convention) == convention
    # the proxy's snapshots before this change: {"format", "prompt_tokens", ..., "raw"}
    old_proxy = {"format": "anthropic", "prompt_tokens": 4112, "cached_tokens": 4000, "cache_write_tokens": 100,
                 "output_tokens": 42, "raw": {"input_tokens": 12, "cache_read_input_tokens": 4000,
                                              "cache_creation_input_tokens": 100, "output_tokens": 42}}
    assert normalise(old_proxy) == {"prompt": 4112, "cache_read": 4000, "cache_write": 100, "output": 42,
                                    "source": "log"}
    # a provider's own usage object, as a request log may hold it
    assert normalise({"prompt_tokens": 50, "prompt_cache_hit_tokens": 32, "prompt_cache_miss_tokens": 18})[
        "cache_read"] == 32
    assert normalise({"promptTokenCount": 7, "cachedContentTokenCount": 2})["prompt"] == 7
    assert normalise({"nothing": 1}) is None and normalise("x") is None
