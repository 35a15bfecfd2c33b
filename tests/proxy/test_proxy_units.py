"""Units of fidelity.proxy: usage from replies (against recorded real traffic),
the parent index, the script format, the Anthropic billing block by endpoint,
and the committed real-harness fixtures."""

from __future__ import annotations

import gzip
import json
import zlib
from pathlib import Path

import orjson
import pytest
from hypothesis import given
from hypothesis import strategies as st

from fidelity.errors import InputError
from fidelity.proxy.parent import ParentIndex, Seen, view_digests
from fidelity.proxy.script import RequestView, parse_script
from fidelity.traffic.usage import Decoder, StreamReader, from_response

REPO = Path(__file__).resolve().parents[2]
HARNESS = REPO / "fixtures" / "harness"

ANTHROPIC_SSE = (
    b'event: message_start\ndata: {"type":"message_start","message":{"id":"m","usage":{"input_tokens":12,'
    b'"cache_creation_input_tokens":100,"cache_read_input_tokens":4000,"output_tokens":1}}}\n\n'
    b'event: content_block_delta\ndata: {"type":"content_block_delta","index":0,"delta":{"type":"text_delta",'
    b'"text":"hi"}}\n\n'
    b'event: message_delta\ndata: {"type":"message_delta","delta":{"stop_reason":"end_turn"},'
    b'"usage":{"output_tokens":42}}\n\nevent: message_stop\ndata: {"type":"message_stop"}\n\n'
)
CHAT_SSE = (
    b'data: {"choices":[{"index":0,"delta":{"content":"a"}}]}\n\n'
    b'data: {"choices":[],"usage":{"prompt_tokens":2000,"completion_tokens":3,'
    b'"prompt_tokens_details":{"cached_tokens":1920}}}\n\ndata: [DONE]\n\n'
)
RESPONSES_SSE = (
    b'event: response.created\ndata: {"type":"response.created","response":{"usage":null}}\n\n'
    b'event: response.completed\ndata: {"type":"response.completed","response":{"usage":{"input_tokens":3000,'
    b'"input_tokens_details":{"cached_tokens":2048},"output_tokens":5}}}\n\n'
)
GEMINI_SSE = (
    b'data: {"candidates":[],"usageMetadata":{"promptTokenCount":900}}\r\n\r\n'
    b'data: {"candidates":[],"usageMetadata":{"promptTokenCount":900,"cachedContentTokenCount":512,'
    b'"candidatesTokenCount":7}}\r\n\r\n'
)
EXPECTED = {ANTHROPIC_SSE: (4112, 4000, 42), CHAT_SSE: (2000, 1920, 3),
            RESPONSES_SSE: (3000, 2048, 5), GEMINI_SSE: (900, 512, 7)}


def _read(stream: bytes, cuts: list[int]) -> tuple:
    r = StreamReader(stream=True)
    last = 0
    for c in sorted(set(cuts)):
        r.feed(stream[last:c])
        last = c
    r.feed(stream[last:])
    u = r.close()
    # the streaming reader and the whole-body reader are one parser: same figures
    assert u == from_response(None, "text/event-stream", stream)
    return (u["prompt"], u["cache_read"], u["output"])


@pytest.mark.parametrize("stream", list(EXPECTED), ids=["anthropic", "chat", "responses", "gemini"])
def test_usage_from_each_provider_stream(stream):
    assert _read(stream, []) == EXPECTED[stream]


# ci profile: 200 derandomized examples
@given(st.sampled_from(list(EXPECTED)), st.lists(st.integers(min_value=0, max_value=2000), max_size=30))
def test_usage_does_not_depend_on_chunking(stream, cuts):
    assert _read(stream, [c % (len(stream) + 1) for c in cuts]) == EXPECTED[stream]


def test_oversized_event_is_dropped_not_buffered():
    r = StreamReader(stream=True, max_event=1000)
    r.feed(b"data: " + b"x" * 5000)  # no newline yet: the buffer must not grow past the cap
    assert len(r._buf) <= 1000 + 5000
    r.feed(b"x" * 100_000)
    assert len(r._buf) <= 100_000
    r.feed(b"\n\n" + CHAT_SSE)
    assert r.close()["cache_read"] == 1920


def test_gzip_reply_decoded_for_usage():
    body = orjson.dumps({"usage": {"prompt_tokens": 10, "prompt_tokens_details": {"cached_tokens": 0}}})
    d = Decoder("gzip")
    r = StreamReader(stream=False)
    data = gzip.compress(body)
    for i in range(0, len(data), 5):
        r.feed(d.feed(data[i : i + 5]))
    assert r.close()["prompt"] == 10
    assert not Decoder("br").ok and Decoder("br").feed(b"x") == b""


def _cassette_body(body) -> bytes:
    raw = body.get("string") if isinstance(body, dict) else body
    if isinstance(raw, str):
        return raw.encode("utf-8", "surrogatepass")
    if raw[:2] == b"\x1f\x8b":
        return gzip.decompress(raw)
    try:
        return zlib.decompress(raw)
    except zlib.error:
        return raw


def test_usage_matches_recorded_real_traffic(shared_real):
    """Every recorded reply of ../shared/real/recorded-usage whose usage
    pairs.jsonl lists: the reader (fed in 7-byte chunks) finds the same
    cache-read figure."""
    yaml = pytest.importorskip("yaml")
    root = shared_real / "recorded-usage"
    rows = [json.loads(line) for line in (root / "pairs.jsonl").read_text().splitlines() if line.strip()]
    rows = [r for r in rows if r["provider"] in ("anthropic", "openai", "google", "deepseek")]
    docs: dict[str, dict] = {}
    checked = agree = 0
    for row in rows:
        path = f"{row['source']}/{row['path']}"
        if not (root / path).is_file():
            continue
        if path not in docs:
            docs[path] = yaml.safe_load((root / path).read_text())
        doc = docs[path]
        if "log" in doc:  # a HAR file (Polly.js)
            resp = doc["log"]["entries"][row["idx"]]["response"]
            body = (resp["content"].get("text") or "").encode()
            ctype = " ".join(h["value"] for h in resp["headers"] if h["name"].lower() == "content-type")
        else:  # a vcrpy cassette
            resp = doc["interactions"][row["idx"]]["response"]
            # pydantic-ai keeps a parsed body: re-encode it (usage reading needs values, not bytes)
            body = _cassette_body(resp["body"]) if "body" in resp else orjson.dumps(resp["parsed_body"])
            ctype = " ".join(v for k, vs in resp["headers"].items() if k.lower() == "content-type" for v in vs)
        reader = StreamReader(stream="text/event-stream" in ctype)
        for i in range(0, len(body), 7):
            reader.feed(body[i : i + 7])
        usage = reader.close()
        checked += 1
        if usage is None:  # a reply without a usage object (count_tokens): nothing cached to report
            agree += not row["cache_read"] and b'"usage' not in body
        elif (usage["cache_read"] or 0) == (row["cache_read"] or 0):
            agree += 1
    assert checked >= 100
    assert agree == checked, f"{agree}/{checked} recorded replies agree"


# -- parent index --------------------------------------------------------------------


def _seen(name: str, segs: list[bytes], model: str = "m") -> Seen:
    return Seen(name, "openai-chat", model, None, tuple(segs), 1)


def test_parent_is_longest_common_prefix_ties_to_most_recent():
    idx = ParentIndex()
    assert idx.observe(_seen("a", [b"p", b"sys", b"u1"])) is None
    assert idx.observe(_seen("b", [b"p", b"sys", b"u1", b"a1", b"u2"])).name == "a"
    assert idx.observe(_seen("c", [b"p", b"sys", b"u1", b"a1", b"u3"])).name == "b"
    assert idx.observe(_seen("d", [b"p", b"sys", b"zz"])).name == "c"  # tie: most recent
    assert idx.observe(_seen("e", [b"p", b"other"])) is None  # only the cache key shared
    assert idx.observe(_seen("f", [b"p", b"sys", b"u1"], model="other")) is None


def test_parent_index_is_bounded():
    idx = ParentIndex(limit=10)
    for i in range(100):
        idx.observe(_seen(str(i), [b"p", b"s", str(i).encode()]))
    assert len(idx) == 10


def test_view_digests_of_unknown_body_is_empty():
    assert view_digests("openai-chat", b"not json") == ((), 0)
    assert view_digests(None, b"{}") == ((), 0)


# -- scripts -------------------------------------------------------------------------


def test_script_rules_match_in_order_and_count_uses():
    s = parse_script({"defaults": {"text": "d"}, "rule": [
        {"name": "once", "when": {"last_contains": "GO", "has_tool": "t"}, "times": 1, "reply": {"text": "1"}},
        {"name": "quoted", "when": {"last_contains": 'say "hi"\n'}, "reply": {"text": "2"}}]})
    body = {"model": "m", "tools": [{"type": "function", "function": {"name": "t"}}],
            "messages": [{"role": "user", "content": "GO now"}, {"role": "system", "content": "later"}]}
    view = RequestView("openai-chat", "m", "/v1/chat/completions", orjson.dumps(body), body)
    assert s.reply_for(view)[0] == "once"
    assert s.reply_for(view)[0] == "default"  # used up
    body2 = {"model": "m", "messages": [{"role": "user", "content": 'say "hi"\n'}]}
    assert s.reply_for(RequestView("openai-chat", "m", "/", orjson.dumps(body2), body2))[0] == "quoted"


@pytest.mark.parametrize("bad,message", [
    ({"rule": [{"when": {"x": "1"}, "reply": {"text": "a"}}]}, "unknown condition 'x'"),
    ({"rule": [{"reply": {}}]}, "needs text, tool_calls or error"),
    ({"rule": [{"reply": {"text": "a"}, "times": 0}]}, "times must be a positive integer"),
    ({"rule": [{"reply": {"text": "a", "event_delay_s": -1}}]}, "event_delay_s"),
    ({"nope": 1}, "unknown top-level key"),
])
def test_script_errors_name_the_problem(bad, message):
    with pytest.raises(InputError, match=message):
        parse_script(bad, path="s.toml")


def test_docs_script_example_parses():
    from fidelity.proxy.script import load_script

    text = (REPO / "docs" / "proxy.md").read_text()
    block = text.split("```toml\n", 1)[1].split("```", 1)[0]
    path = REPO / "docs" / "proxy.md"
    s = parse_script(__import__("tomllib").loads(block), path=str(path))
    assert [r.name for r in s.rules] and load_script  # the documented example is a valid script


# -- Anthropic's billing block, by endpoint (real Claude Code bytes) ----------------------


def _pair(name: str) -> tuple[bytes, bytes]:
    from fidelity.proxy import _store

    folder = HARNESS / name
    return (_store.snapshot.read(folder / "parent.snapshot").body, _store.snapshot.read(folder / "child.snapshot").body)


def test_billing_block_keyed_only_off_anthropic_api():
    from fidelity.wire import anthropic_messages as am

    assert not am.billing_block_keyed(None)
    assert not am.billing_block_keyed("https://api.anthropic.com/v1/messages?beta=true")
    assert am.billing_block_keyed("https://api.deepseek.com/anthropic/v1/messages")
    assert am.billing_block_keyed("http://127.0.0.1:8080/v1/messages")
    parent, _ = _pair("claude-code-2.1.197")
    d = am.ANTHROPIC_MESSAGES
    first = [s.pointer for s in d.cache_view(parent, endpoint=None) if s.kind == "system"]
    third = [s.pointer for s in d.cache_view(parent, endpoint="http://127.0.0.1:1/v1/messages") if s.kind == "system"]
    assert third[0] == "/system/0" and "/system/0" not in first and first == third[1:]


def test_claude_code_fork_scored_for_both_endpoints():
    from fidelity.diff import compare

    parent, child = _pair("claude-code-2.1.197")
    tp = compare(parent, child, dialect="anthropic-messages", endpoint="https://api.deepseek.com/anthropic/v1/messages")
    fp = compare(parent, child, dialect="anthropic-messages", endpoint="https://api.anthropic.com/v1/messages")
    assert tp.view.segment == ("system", 0) and tp.cache.predicted_cached == 0 and tp.cache.lost > 10_000
    assert fp.view.segment != ("system", 0) and fp.cache.predicted_cached > 10_000
    covered = (tp.cache.predicted_cached + tp.cache.lost, fp.cache.predicted_cached + fp.cache.lost)
    assert abs(covered[0] - covered[1]) <= 64, covered


def test_harness_rows_from_committed_fixtures():
    from fidelity.proxy.harness_rows import harness_rows

    rows = list(harness_rows(HARNESS))
    qwen = [r for r in rows if r.harness == "qwen-code"]
    assert {r.version for r in qwen} == {"0.24.4"} and len(qwen) == 4
    assert all(r.cause == "tools_changed: tool removed: agent, get_goal, list_agents, update_goal" for r in qwen)
    assert all(r.lost_tokens > 0 for r in qwen)
    claude = {r.provider.split(" (")[0]: r for r in rows if r.harness == "claude-code"}
    assert claude["Anthropic API"].lost_tokens == 0
    assert claude["Anthropic-compatible third party"].first_divergence == "system[0] /system/0/text"
    assert json.dumps([r.to_json() for r in rows])  # JSON-ready


def test_the_verdict_line_counts_every_break_and_what_fixing_all_keeps() -> None:
    """Issue 30: the proxy's line says how many breaks follow the first and
    what a fully fixed child reads, the figures ``fidelity diff`` lists."""
    import orjson

    from fidelity.diff import compare_with_breaks
    from fidelity.proxy.parent import judge
    from fidelity.proxy.server import _more

    long = "You are a careful assistant. " * 400  # past OpenAI's 1,024-token minimum
    tools = [{"type": "function", "function": {"name": n, "parameters": {"type": "object", "properties": {}}}}
             for n in ("read", "write")]
    msgs = [{"role": "system", "content": long}, {"role": "user", "content": "first question " * 50},
            {"role": "assistant", "content": "an answer"}, {"role": "user", "content": "second"}]
    parent = orjson.dumps({"model": "gpt-4o", "tools": tools, "messages": msgs})
    edited = [dict(m) for m in msgs]
    edited[1]["content"] = "first question, reworded " * 50
    child = orjson.dumps({"model": "gpt-4o", "tools": tools[:1], "messages": [*edited, {"role": "user", "content": "go"}]})
    v = judge(parent, child, "openai-chat", with_breaks=True)
    listed = compare_with_breaks(parent, child, dialect="openai-chat").breaks
    assert listed is not None and len(listed) == 2
    assert v.more_breaks == 1 and v.kept_if_fixed == listed[-1].kept
    assert v.kept_if_fixed is not None and v.kept_if_fixed > v.predicted_cached
    assert _more(v) == f" · +1 more break; all fixed keeps {v.kept_if_fixed:,}"
    plain = judge(parent, child, "openai-chat")
    assert plain.more_breaks == 0 and plain.kept_if_fixed is None and _more(plain) == ""


# -- Responses namespaced tool calls (Codex's multi_agent_v1) --------------------------


def test_a_namespaced_tool_call_is_answered_with_its_namespace() -> None:
    """Codex declares its subagent tools inside a ``{"type": "namespace"}`` tool and
    dispatches a ``function_call`` on name and namespace: the script's ``namespace``
    reaches the Responses item (JSON and stream), ``has_tool`` sees the inner names,
    and a call without one carries no namespace key."""
    from fidelity.proxy.upstream import _Responses

    s = parse_script({"rule": [{"name": "spawn", "when": {"has_tool": "spawn_agent"}, "reply": {"tool_calls": [
        {"name": "spawn_agent", "namespace": "multi_agent_v1", "arguments": {"message": "go"}},
        {"name": "exec_command", "arguments": {"cmd": "ls"}}]}}]})
    body = {"model": "gpt-5.1-codex", "input": [{"role": "user", "content": "x"}], "tools": [
        {"type": "function", "name": "exec_command"},
        {"type": "namespace", "name": "multi_agent_v1", "tools": [{"type": "function", "name": "spawn_agent"}]}]}
    view = RequestView("openai-responses", "gpt-5.1-codex", "/v1/responses", orjson.dumps(body), body)
    assert {"exec_command", "multi_agent_v1", "spawn_agent"} <= view.tool_names()
    rule, reply = s.reply_for(view)
    assert rule == "spawn"
    items = _Responses.output(7, reply)
    assert [(i["name"], i.get("namespace")) for i in items] == [("spawn_agent", "multi_agent_v1"),
                                                               ("exec_command", None)]
    assert "namespace" not in items[1]
    assert orjson.loads(items[0]["arguments"]) == {"message": "go"}


def test_a_namespace_that_is_not_a_string_is_refused() -> None:
    with pytest.raises(InputError, match="namespace must be a string") as exc:
        parse_script({"rule": [{"reply": {"tool_calls": [{"name": "t", "namespace": 3}]}}]}, path="s.toml")
    assert "/rule/0/reply/tool_calls/0/namespace" in str(exc.value)
