"""`fidelity.diff.compare` on bodies made by the official SDKs.

Every cause the differ names is produced here by a real SDK call (captured
through an httpx mock transport), and each test asserts the pointer, the
cause and the token figures.
"""

from __future__ import annotations

import copy
import json

import httpx
import httpx2
import pytest

from fidelity.diff import compare
from fidelity.errors import InputError

openai = pytest.importorskip("openai")
anthropic = pytest.importorskip("anthropic")


def _capture_client(cls, http=httpx, **kwargs):
    """An SDK client whose transport records each body and answers 400."""
    seen: list[bytes] = []

    def handler(request):
        seen.append(request.content)
        return http.Response(400, json={"error": {"message": "captured", "type": "x"}})

    client = cls(api_key="sk-test", max_retries=0,
                 http_client=http.Client(transport=http.MockTransport(handler)), **kwargs)
    return client, seen


_OPENAI, _OPENAI_SEEN = _capture_client(openai.OpenAI)
_DEEPSEEK, _DEEPSEEK_SEEN = _capture_client(openai.OpenAI, base_url="https://api.deepseek.com")
_ANTHROPIC, _ANTHROPIC_SEEN = _capture_client(anthropic.Anthropic, http=httpx2)  # anthropic 2.x is built on httpx2


def openai_body(**kwargs) -> bytes:
    with pytest.raises(openai.APIStatusError):
        _OPENAI.chat.completions.create(**kwargs)
    return _OPENAI_SEEN[-1]


def deepseek_body(**kwargs) -> bytes:
    with pytest.raises(openai.APIStatusError):
        _DEEPSEEK.chat.completions.create(**kwargs)
    return _DEEPSEEK_SEEN[-1]


def anthropic_body(**kwargs) -> bytes:
    with pytest.raises(anthropic.APIStatusError):
        _ANTHROPIC.messages.create(**kwargs)
    return _ANTHROPIC_SEEN[-1]


SYSTEM = "You are a careful coding agent. " * 60


def broken(r, *, cause: str, pointer: str, share_at_least: int = 0) -> None:
    """Shared assertions for a child whose prefix broke: the cause and the
    pointer, the cache never serves more than the shared prefix, and the
    tokens past the break are counted as lost."""
    assert r.cause.kind == cause
    assert r.view.pointer == pointer, r.view.pointer
    assert share_at_least <= r.tokens.common_prefix < r.tokens.parent_prompt
    assert r.cache.predicted_cached <= r.tokens.common_prefix
    assert r.cache.predicted_cached % 128 == 0 if r.provider == "deepseek" else True
    assert r.cache.lost > 0
    assert r.cache.predicted_cached + r.cache.lost <= r.tokens.child_prompt


def tool(name: str, description: str = "Does a thing.", props=None) -> dict:
    props = props or {"path": {"type": "string", "description": "file path"},
                      "limit": {"type": "integer"}}
    return {"type": "function", "function": {"name": name, "description": description,
                                             "parameters": {"type": "object", "properties": props,
                                                            "required": ["path"]}}}


TOOLS = [tool(n, f"Tool {n}: " + "reads and writes files in the workspace. " * 8)
         for n in ("read_file", "write_file", "grep", "bash", "list_dir")]


def history(n: int = 12) -> list[dict]:
    msgs: list[dict] = [{"role": "system", "content": SYSTEM}]
    for i in range(n):
        msgs.append({"role": "user", "content": f"Step {i}: look at module {i} and explain it. 中文说明 {i}"})
        msgs.append({"role": "assistant", "content": None, "tool_calls": [
            {"id": f"call_{i}", "type": "function",
             "function": {"name": "read_file", "arguments": json.dumps({"path": f"src/m{i}.py", "limit": 200})}}]})
        msgs.append({"role": "tool", "tool_call_id": f"call_{i}", "content": f"def f{i}():\n    return {i}\n" * 20})
        msgs.append({"role": "assistant", "content": f"Module {i} defines f{i}, which returns {i}."})
    return msgs


PARENT = dict(model="gpt-4o", messages=history(), tools=TOOLS)


def test_child_that_only_appends_loses_nothing():
    parent = openai_body(**PARENT)
    child_msgs = history() + [{"role": "user", "content": "Directive: summarise everything."}]
    child = openai_body(**{**PARENT, "messages": child_msgs})
    r = compare(parent, child)
    assert r.dialect == "openai-chat" and r.model == "gpt-4o"
    assert r.cause.kind == "appended_only"
    assert not r.raw.identical and r.raw.first_divergent_byte is not None
    assert r.view.segment == ("message", len(child_msgs) - 2)  # index within kind: system is its own kind
    # the parent's prompt ends with the reply priming OpenAI appends (<|start|>assistant<|message|>,
    # 3 tokens, counted as replay and scan count it); the child's next turn shares its first token only
    from fidelity.tokens import for_model
    from fidelity.tokens.billed import prompt_tail

    priming = len(prompt_tail(for_model("gpt-4o", "openai"), "openai-chat"))
    assert priming == 3
    assert r.tokens.common_prefix == r.tokens.parent_prompt - priming + 1 > 1024
    assert r.cache.lost == 0
    assert r.cache.predicted_cached > 0 and r.cache.predicted_cached <= r.tokens.parent_prompt
    assert r.tokens.tokenizer == "o200k_base" and not r.tokens.estimated


def test_a_child_sent_after_the_parents_entries_ran_out_reads_and_loses_nothing():
    """With the two send times (``compare(times=...)``, as ``diff FOLDER``
    reads them from snapshot metadata) the parent's entries run out as in
    ``replay``: a month later the child reads nothing and loses nothing."""
    parent = openai_body(**PARENT)
    msgs = history()
    msgs[3] = {**msgs[3], "content": msgs[3]["content"] + " (edited)"}
    child = openai_body(**{**PARENT, "messages": msgs + [{"role": "user", "content": "go on"}]})
    near = compare(parent, child, times=(0.0, 60.0))
    late = compare(parent, child, times=(0.0, 30 * 86400.0))
    assert near == compare(parent, child)  # within the lifetime: as without times
    assert near.cache.predicted_cached > 0 and near.cache.lost > 0
    assert late.cache.predicted_cached == 0 and late.cache.lost == 0
    assert late.cache.written >= near.cache.written + near.cache.predicted_cached - 128


def test_identical_bodies():
    parent = openai_body(**PARENT)
    r = compare(parent, parent)
    assert r.cause.kind == "identical" and r.raw.identical
    assert r.view.first_divergent_byte is None and r.cache.lost == 0
    assert r.to_json()["raw"]["first_divergent_byte"] is None


def test_tool_appended_ahead_of_history():
    parent = openai_body(**PARENT)
    child = openai_body(**{**PARENT, "tools": TOOLS + [tool("report", "Report back to the parent.")]})
    r = compare(parent, child)
    assert r.cause.kind == "tools_changed"
    assert r.cause.detail == "tool added: report"
    assert r.view.segment == ("tools", len(TOOLS))
    assert r.view.pointer == f"/tools/{len(TOOLS)}"
    # Everything after the tools is lost: the whole system prompt and history.
    assert r.tokens.common_prefix < r.tokens.parent_prompt // 4
    assert r.cache.lost > r.tokens.parent_prompt // 2
    assert r.cost is not None and r.cost.usd_lost > 0


def test_tools_reordered():
    parent = openai_body(**PARENT)
    child = openai_body(**{**PARENT, "tools": [TOOLS[1], TOOLS[0], *TOOLS[2:]]})
    r = compare(parent, child)
    assert r.cause.detail.startswith("tools reordered")
    assert r.view.segment == ("tools", 0)
    # read_file and write_file differ first in the name: "read_file" vs "write_file"
    broken(r, cause="tools_changed", pointer="/tools/0/function/name")
    assert r.tokens.common_prefix < 20 and r.cache.predicted_cached == 0


def test_description_edited():
    parent = openai_body(**PARENT)
    tools = copy.deepcopy(TOOLS)
    tools[2]["function"]["description"] = "Search file contents with a regular expression."
    r = compare(parent, openai_body(**{**PARENT, "tools": tools}))
    assert r.cause.detail == "description changed in tool grep"
    broken(r, cause="tools_changed", pointer="/tools/2/function/description", share_at_least=100)
    assert r.cache.lost > r.tokens.parent_prompt // 2


def test_schema_key_order_changed():
    parent = openai_body(**PARENT)
    tools = copy.deepcopy(TOOLS)
    props = tools[3]["function"]["parameters"]["properties"]
    tools[3]["function"]["parameters"]["properties"] = dict(reversed(list(props.items())))
    r = compare(parent, openai_body(**{**PARENT, "tools": tools}))
    assert r.cause.detail == "key order changed in the schema of tool bash"
    broken(r, cause="tools_changed", pointer="/tools/3/function/parameters/properties", share_at_least=200)
    assert r.cache.lost > r.tokens.parent_prompt // 2
    assert r.cause.summary is None  # deepdiff sees no difference: only the order moved


def test_timestamp_in_system_prompt():
    parent = openai_body(**PARENT)
    msgs = history()
    msgs[0] = {"role": "system", "content": SYSTEM + "Current time: 2026-11-30T04:12:09Z"}
    p2 = history()
    p2[0] = {"role": "system", "content": SYSTEM + "Current time: 2026-11-30T03:58:41Z"}
    parent = openai_body(**{**PARENT, "messages": p2})
    r = compare(parent, openai_body(**{**PARENT, "messages": msgs}))
    assert r.cause.detail.startswith("volatile value (timestamp)")
    assert "2026-11-30T03:58:41Z" in r.cause.detail
    # tools and nearly all of the system prompt are shared; the history is lost
    broken(r, cause="system_changed", pointer="/messages/0/content", share_at_least=700)
    assert r.cache.lost > r.tokens.parent_prompt // 2


def test_model_change_loses_everything():
    parent = openai_body(**PARENT)
    r = compare(parent, openai_body(**{**PARENT, "model": "gpt-4.1"}))
    assert r.cause.kind == "params_changed"
    assert r.cause.detail == 'model changed: "gpt-4o" → "gpt-4.1"'
    assert r.view.segment == ("params", 0) and r.view.pointer == "/model"
    assert r.cache.predicted_cached == 0
    assert r.tokens.common_prefix == 0  # another cache key: nothing is shared
    assert r.cache.lost > r.tokens.parent_prompt // 2


def test_earlier_message_edited():
    parent = openai_body(**PARENT)
    msgs = history()
    msgs[5] = {**msgs[5], "content": "Step 1: look at module ONE and explain it."}
    r = compare(parent, openai_body(**{**PARENT, "messages": msgs}))
    assert r.cause.detail == "text edited (at /messages/5)"
    assert r.view.segment == ("message", 4)
    broken(r, cause="messages_rewritten", pointer="/messages/5/content", share_at_least=1024)
    assert r.cache.predicted_cached >= 1024  # the head and the first turns still hit


def test_argument_key_order_drift():
    parent = openai_body(**PARENT)
    msgs = history()
    call = msgs[2]["tool_calls"][0]
    call["function"]["arguments"] = json.dumps({"limit": 200, "path": "src/m0.py"})
    r = compare(parent, openai_body(**{**PARENT, "messages": msgs}))
    assert r.cause.detail == "tool-call argument key order changed (at /messages/2)"
    broken(r, cause="messages_rewritten", pointer="/messages/2/tool_calls/0/function/arguments",
           share_at_least=900)


def test_reasoning_dropped_on_replay_deepseek():
    def msgs(with_reasoning: bool) -> list[dict]:
        out = history(6)
        for m in out:
            if m["role"] == "assistant" and with_reasoning:
                m["reasoning_content"] = "Let me think about which file to open."
        return out
    parent = deepseek_body(model="deepseek-chat", messages=msgs(True), tools=TOOLS)
    child = deepseek_body(model="deepseek-chat", messages=msgs(False), tools=TOOLS)
    r = compare(parent, child)
    assert r.dialect == "deepseek"
    assert r.cause.detail == "reasoning dropped on replay (at /messages/2)"
    assert r.view.segment == ("message", 1)
    # DeepSeek V4 keeps reasoning on tool-call turns: the first such turn breaks
    broken(r, cause="messages_rewritten", pointer="/messages/2", share_at_least=500)


def test_anthropic_tool_added_is_seen_first_in_cache_order():
    base = dict(model="claude-sonnet-4-6", max_tokens=1024, system=SYSTEM,
                messages=[{"role": "user", "content": "hello"}],
                tools=[{"name": "read_file", "description": "Read.", "input_schema": {"type": "object"}}])
    parent = anthropic_body(**base)
    child = anthropic_body(**{**base, "system": SYSTEM + " Extra.",
                              "tools": base["tools"] + [{"name": "report", "description": "R.",
                                                         "input_schema": {"type": "object"}}]})
    r = compare(parent, child)
    assert r.dialect == "anthropic-messages"
    # Anthropic's cache reads tools before system: the tool is the first break.
    assert r.cause.kind == "tools_changed" and r.cause.detail == "tool added: report"
    assert r.tokens.estimated and r.tokens.tokenizer.startswith("claude")


def test_json_schema_shape():
    parent = openai_body(**PARENT)
    child = openai_body(**{**PARENT, "tools": TOOLS + [tool("report")]})
    j = compare(parent, child).to_json()
    assert list(j) == ["schema", "dialect", "provider", "model", "raw", "cache_view", "cause",
                       "tokens", "cache", "cost", "cost_note", "breaks"]
    assert j["breaks"] is None  # listed only when asked for (compare_with_breaks, fidelity diff)
    assert set(j["cache_view"]) >= {"first_divergent_byte", "segment", "pointer",
                                    "parent_excerpt", "child_excerpt"}
    assert len(j["cache_view"]["parent_excerpt"]) <= 80 * 4 * 2 + 10
    assert j["cost"]["price_table"] and j["cost"]["as_of"]


def test_bad_input_names_the_file():
    with pytest.raises(InputError) as err:
        compare(b"{not json", b"{}", parent_path="p.json")
    assert str(err.value).startswith("p.json: not valid JSON")
    with pytest.raises(InputError) as err:
        compare(b'{"hello": 1}', b'{"hello": 1}', parent_path="p.json")
    assert "cannot detect the provider" in str(err.value)
