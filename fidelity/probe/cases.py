"""Probe cases: a parent request and its child (sometimes more), built from a
few parameters, so that the engine test (hypothesis) and ``fidelity probe
--cases N`` (a seeded generator) send the same kinds of traffic; each kind aims
at one cache rule (the table: docs/probe.md). Each case starts with fresh
random ids from ``TOKEN_RANGE``, so cases do not share prefixes by accident.
"""

from __future__ import annotations

import random
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

__all__ = ["KINDS", "TOKEN_RANGE", "ProbeCase", "token_case", "chat_case", "fixture_case", "fixture_variants",
           "generate"]

KINDS = ("boundary", "identical", "extension", "first-block", "eviction", "chat", "fixture")
#: token ids used for raw prompts (plain vocabulary, below the added tokens)
TOKEN_RANGE = (1000, 120000)


@dataclass(frozen=True)
class ProbeCase:
    """Requests sent in order (the first is the parent), with a name for reports."""

    name: str
    kind: str
    bodies: tuple[Mapping[str, Any], ...] = field(default_factory=tuple)


def _ids(rng: random.Random, n: int) -> list[int]:
    return [rng.randrange(*TOKEN_RANGE) for _ in range(n)]


def _completion(model: str, ids: list[int]) -> dict[str, Any]:
    return {"model": model, "prompt": ids, "max_tokens": 1, "temperature": 0}


def token_case(kind: str, seed: int, block: int, *, blocks: int = 2, delta: int = 0, tail: int = 5,
               filler_blocks: int = 0, model: str = "fidelity-tiny") -> ProbeCase:
    """A raw-token case of ``kind`` (``boundary``, ``identical``,
    ``extension``, ``first-block``, ``eviction``) from its parameters."""
    rng = random.Random(seed)
    shared = max(1, blocks * block + delta)
    if kind == "boundary":
        base = _ids(rng, shared + tail)
        child = base[:shared] + _ids(rng, tail + 1)
        while child[shared] == base[shared]:
            child[shared] = rng.randrange(*TOKEN_RANGE)
        pair = (base, child)
    elif kind == "identical":
        base = _ids(rng, shared)
        pair = (base, list(base))
    elif kind == "extension":
        base = _ids(rng, shared)
        pair = (base, base + _ids(rng, tail))
    elif kind == "eviction":  # parent, an unrelated filler that may push it out, then the parent extended
        base = _ids(rng, shared)
        filler = _ids(rng, max(1, filler_blocks * block + delta))
        name = f"{kind}/b{block}/k{blocks}{delta:+d}/f{filler_blocks}/t{tail}/s{seed}"
        return ProbeCase(name, kind, tuple(_completion(model, ids) for ids in (base, filler, base + _ids(rng, tail))))
    elif kind == "first-block":
        base = _ids(rng, shared + tail)
        at = max(0, min(block - 1, delta % block if block > 1 else 0, len(base) - 1))
        child = list(base)
        child[at] = base[at] + 1 if base[at] + 1 < TOKEN_RANGE[1] else base[at] - 1
        pair = (base, child)
    else:
        raise ValueError(f"not a token case kind: {kind!r}")
    name = f"{kind}/b{block}/k{blocks}{delta:+d}/t{tail}/s{seed}"
    return ProbeCase(name, kind, tuple(_completion(model, ids) for ids in pair))


_WORDS = ("cache", "prefix", "fork", "agent", "block", "token", "harness", "vllm", "probe", "child", "parent",
          "schema", "tool", "read", "write", "diff", "byte", "json", "engine", "turn")


def _text(rng: random.Random, words: int) -> str:
    return " ".join(rng.choice(_WORDS) for _ in range(words))


def _tool(rng: random.Random, i: int) -> dict[str, Any]:
    props = {f"arg{j}": {"type": rng.choice(["string", "integer", "boolean"]), "description": _text(rng, 4)}
             for j in range(rng.randrange(1, 4))}
    return {"type": "function", "function": {"name": f"tool_{i}_{rng.randrange(1000)}",
                                             "description": _text(rng, rng.randrange(3, 30)),
                                             "parameters": {"type": "object", "properties": props,
                                                            "required": list(props)[:1]}}}


def chat_case(seed: int, *, system_words: int = 200, tools: int = 3, turns: int = 2,
              model: str = "fidelity-tiny") -> ProbeCase:
    """A conversation with a system prompt and tools; the child adds an
    assistant tool call, its result and a new user turn."""
    rng = random.Random(seed)
    system = f"[{seed}] " + _text(rng, system_words)
    messages: list[dict[str, Any]] = [{"role": "system", "content": system}]
    for _ in range(turns):
        messages.append({"role": "user", "content": _text(rng, rng.randrange(5, 80))})
        messages.append({"role": "assistant", "content": _text(rng, rng.randrange(0, 40))})
    messages.append({"role": "user", "content": _text(rng, rng.randrange(5, 60))})
    tool_list = [_tool(rng, i) for i in range(tools)]
    parent = {"model": model, "messages": messages, "max_tokens": 1, "temperature": 0}
    if tool_list:
        parent["tools"] = tool_list
    call_args = '{"arg0": "' + _text(rng, 3) + '"}'
    child_messages = messages + [
        {"role": "assistant", "content": "", "tool_calls": [
            {"id": "call_1", "type": "function",
             "function": {"name": tool_list[0]["function"]["name"] if tool_list else "none", "arguments": call_args}}]},
        {"role": "tool", "tool_call_id": "call_1", "content": _text(rng, rng.randrange(5, 120))},
        {"role": "user", "content": _text(rng, rng.randrange(5, 40))},
    ]
    child = dict(parent, messages=child_messages)
    name = f"chat/sys{system_words}/tools{tools}/turns{turns}/s{seed}"
    return ProbeCase(name, "chat", (parent, child))


def fixture_variants() -> list[tuple[str, str]]:
    """(session, variant) pairs of the bundled fixtures."""
    from .. import compose, fixtures

    sessions = [s.name for s in fixtures.load().sessions]
    return [(s, v) for s in sessions for v in compose.variant_names()]


def fixture_case(session: str, variant: str, *, model: str = "fidelity-tiny") -> ProbeCase:
    """A bundled session's parent request and ``variant``'s child, as the
    ``vllm`` dialect renders them (model renamed to the engine's)."""
    import json
    from dataclasses import replace

    from .. import compose, fixtures, wire
    from ..model import Route

    fs = fixtures.load()
    sess = next(s for s in fs.sessions if s.name == session)
    dialect = wire.get("vllm")
    history = replace(sess.history, route=Route("vllm", model))
    parent = compose.parent_request(history)
    var = compose.get_variant(variant)
    directives = sess.siblings[: var.fanout] if var.fanout > 1 else (sess.directive,)
    children = var.children(history, directives, {"alt_model": model, "model": model})
    bodies = []
    for req in (parent, *children):
        body = json.loads(dialect.render(req))
        body["model"] = model
        body["max_tokens"] = 1
        body["temperature"] = 0
        bodies.append(body)
    return ProbeCase(f"fixture/{session}/{variant}", "fixture", tuple(bodies))


def generate(n: int, *, block: int, seed: int = 0, fixtures: bool = True,
             model: str = "fidelity-tiny") -> list[ProbeCase]:
    """``n`` cases cycling through the kinds, parameters drawn from
    ``random.Random(seed)`` (the same ``n`` and ``seed`` give the same cases)."""
    rng = random.Random(seed)
    pairs = fixture_variants() if fixtures else []
    kinds = [k for k in KINDS if k != "fixture" or pairs]
    out: list[ProbeCase] = []
    for i in range(n):
        kind = kinds[i % len(kinds)]
        case_seed = rng.randrange(2**31)
        if kind == "chat":
            out.append(chat_case(case_seed, system_words=rng.randrange(1, 600), tools=rng.randrange(0, 5),
                                 turns=rng.randrange(0, 4), model=model))
        elif kind == "fixture":
            session, variant = pairs[(i // len(kinds)) % len(pairs)]
            out.append(fixture_case(session, variant, model=model))
        else:
            out.append(token_case(kind, case_seed, block, blocks=rng.randrange(0, 12), delta=rng.choice((-1, 0, 1)),
                                  tail=rng.randrange(1, 40), filler_blocks=rng.randrange(1, 12), model=model))
    return out
