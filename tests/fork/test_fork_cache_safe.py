"""CacheSafeParams snapshots, their version, and the no-snapshot fallback."""

from __future__ import annotations

from dataclasses import replace

import orjson
import pytest
from hypothesis import given
from hypothesis import strategies as st

from fidelity.errors import ForkUnavailable
from fidelity.fork import CacheSafeStore, cache_safe, gemini_placeholder
from fidelity.model import Message, Request, Route, SystemBlock, Text, Tool, freeze
from fidelity.strategies import histories, requests, tool_lists

TOOL = Tool("read", "Read a file", freeze({"type": "object", "properties": {"path": {"type": "string"}}}))
TOOL_REORDERED = Tool("read", "Read a file", freeze({"properties": {"path": {"type": "string"}}, "type": "object"}))
PARENT = Request(
    Route("dashscope", "qwen3-coder-plus"),
    system=(SystemBlock("You are a coding agent."),),
    tools=(TOOL,),
    messages=(Message("user", (Text("hi"),)), Message("assistant", (Text("hello"),))),
)


def test_version_moves_only_with_system_or_tools():
    store = CacheSafeStore().update(PARENT)
    assert store.snapshot.version == 1
    more_history = replace(PARENT, messages=PARENT.messages + PARENT.messages)
    assert store.update(more_history).snapshot.version == 1
    assert store.update(PARENT.with_params(temperature=0.3)).snapshot.version == 1
    assert store.update(replace(PARENT, system=(SystemBlock("You are a coding agent!"),))).snapshot.version == 2
    assert store.update(replace(PARENT, tools=(TOOL_REORDERED,))).snapshot.version == 2  # key order counts
    assert store.update(replace(PARENT, tools=())).update(PARENT).snapshot.version == 3


heads = requests(messages=st.just(()), tools=tool_lists(max_size=2))


@given(heads, heads, histories())
def test_version_bumps_exactly_when_the_head_serialises_differently(first, second, history):
    second = replace(second, messages=history)
    a = CacheSafeStore().update(first)
    b = a.update(second)
    changed = orjson.dumps((first.system, first.tools)) != orjson.dumps((second.system, second.tools))
    assert b.snapshot.version == a.snapshot.version + int(changed)
    assert b.snapshot.history == second.messages[-40:]
    assert a.snapshot.history == first.messages[-40:]  # the old store is unchanged


def test_snapshot_keeps_the_last_40_entries():
    turns = [(Message("user", (Text(f"q{i}"),)), Message("assistant", (Text(f"a{i}"),))) for i in range(30)]
    long = replace(PARENT, messages=tuple(m for turn in turns for m in turn))
    snap = CacheSafeStore().update(long).snapshot
    assert snap.history == long.messages[-40:] and len(snap.history) == 40
    assert CacheSafeStore(window=4).update(long).snapshot.history == long.messages[-4:]
    query = cache_safe.query_request(CacheSafeStore().update(long), "suggest")
    assert query.messages[:40] == long.messages[-40:]  # starts at q10, not at q0: no shared prefix
    assert query.messages[0] != long.messages[0] and query.messages[-1] == Message("user", (Text("suggest"),))


def test_fork_with_snapshot_uses_its_head():
    store = CacheSafeStore().update(PARENT)
    later_parent = replace(PARENT, system=(SystemBlock("drifted"),))
    child = cache_safe.fork_request(store, later_parent, "go")
    assert child.system == PARENT.system and child.tools == PARENT.tools
    assert child.messages == gemini_placeholder.plan(later_parent.messages, "go").messages()


def test_fallback_replaces_system_and_tools():
    child = cache_safe.fork_request(None, PARENT, "go")
    assert child.system == (SystemBlock(cache_safe.DEFAULT_FORK_SYSTEM_PROMPT),)
    assert child.tools == PARENT.tools
    extra = Tool("write")
    assert cache_safe.fork_request(None, PARENT, "go", fallback_tools=(extra, TOOL)).tools == (extra, TOOL)
    assert cache_safe.fork_request(None, PARENT, "go", fallback_system="S").system == (SystemBlock("S"),)
    assert child.messages == gemini_placeholder.plan(PARENT.messages, "go").messages()


def test_query_without_snapshot_is_unavailable():
    with pytest.raises(ForkUnavailable, match="no CacheSafeParams snapshot"):
        cache_safe.query_request(CacheSafeStore(), "x")
    assert CacheSafeStore().update(PARENT).clear().snapshot is None
