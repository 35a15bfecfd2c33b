"""A realistic request log for tests and benchmarks (deterministic per seed).

Sessions grow turn by turn, fork subagents, run parallel agents, change
tools and sometimes carry a timestamp in the system prompt; OpenAI Chat
Completions, Anthropic Messages and DeepSeek lines in the request-log format
of docs/scan.md, with gateway-style ``session`` keys."""

from __future__ import annotations

import datetime as _dt
import random
from collections.abc import Iterator
from typing import Any

import orjson

__all__ = ["generate", "write_log"]

_WORDS = ("the build step reads config from the repository root and caches every resolved dependency "
          "so that the next run skips network access unless a lock file changed since the previous "
          "invocation which is checked by hashing its bytes").split()
_SETUPS = (
    ("openai", "https://api.openai.com/v1/chat/completions", "gpt-4.1"),
    ("anthropic", "https://api.anthropic.com/v1/messages", "claude-sonnet-4-5"),
    ("deepseek", "https://api.deepseek.com/chat/completions", "deepseek-v4-flash"),
)
_T0 = _dt.datetime(2026, 11, 23, tzinfo=_dt.UTC).timestamp()


def _text(rng: random.Random, n_words: int) -> str:
    return " ".join(rng.choice(_WORDS) for _ in range(n_words))


def _tool(rng: random.Random, name: str, style: str) -> dict[str, Any]:
    schema = {"type": "object", "properties": {f"arg{i}": {"type": "string", "description": _text(rng, 8)}
                                               for i in range(rng.randint(1, 4))}}
    if style == "anthropic":
        return {"name": name, "description": _text(rng, 30), "input_schema": schema}
    return {"type": "function", "function": {"name": name, "description": _text(rng, 30), "parameters": schema}}


class _App:
    def __init__(self, rng: random.Random, n: int, system_words: tuple[int, int] = (300, 900)) -> None:
        self.style, self.url, self.model = _SETUPS[n % len(_SETUPS)]
        self.system = f"You are agent {n}. " + _text(rng, rng.randint(*system_words))
        self.tools = [_tool(rng, f"tool_{n}_{i}", self.style) for i in range(rng.randint(4, 10))]
        self.volatile = n % 7 == 3  # puts the time of day in its system prompt


def _body(app: _App, system: str, tools: list[Any], msgs: list[Any]) -> dict[str, Any]:
    if app.style == "anthropic":
        # Claude Code's pattern: a breakpoint on the system prompt and one on
        # the last message, moving forward each turn
        last = msgs[-1]
        content = last["content"] if isinstance(last["content"], list) else [{"type": "text", "text": last["content"]}]
        content = [*content[:-1], {**content[-1], "cache_control": {"type": "ephemeral"}}]
        return {"max_tokens": 4096, "messages": [*msgs[:-1], {**last, "content": content}], "model": app.model,
                "system": [{"type": "text", "text": system, "cache_control": {"type": "ephemeral"}}],
                "tools": tools}
    return {"messages": [{"role": "system", "content": system}, *msgs], "model": app.model, "tools": tools}


def _turn(rng: random.Random, app: _App, i: int, tool_name: str) -> list[dict[str, Any]]:
    """An assistant tool call, its result and the next user message."""
    call_id = f"call_{rng.getrandbits(40):010x}"
    args = {"arg0": _text(rng, 5)}
    result = _text(rng, rng.randint(40, 500))
    if app.style == "anthropic":
        return [{"role": "assistant", "content": [{"type": "text", "text": _text(rng, 20)},
                                                  {"type": "tool_use", "id": call_id, "name": tool_name, "input": args}]},
                {"role": "user", "content": [{"type": "tool_result", "tool_use_id": call_id, "content": result},
                                             {"type": "text", "text": _text(rng, rng.randint(5, 40))}]}]
    return [{"role": "assistant", "content": _text(rng, 20),
             "tool_calls": [{"id": call_id, "type": "function",
                             "function": {"name": tool_name, "arguments": orjson.dumps(args).decode()}}]},
            {"role": "tool", "tool_call_id": call_id, "content": result},
            {"role": "user", "content": _text(rng, rng.randint(5, 40))}]


def _session(rng: random.Random, app: _App, sid: str, start: float, append_only: bool,
             history: list[Any] | None = None, depth: int = 0) -> Iterator[tuple[float, str, dict[str, Any]]]:
    t = start
    msgs = list(history) if history else [{"role": "user", "content": _text(rng, rng.randint(10, 60))}]
    if history:
        msgs.append({"role": "user", "content": "Subagent task: " + _text(rng, 30)})
    tools = list(app.tools)
    # agent sessions run long (tens of requests); the mixed log keeps them
    # shorter so that breaks are a larger share of it
    turns = rng.randint(10, 60) if append_only else rng.randint(3, 25 if depth == 0 else 8)
    for i in range(turns):
        system = app.system
        if app.volatile and not append_only:
            system = f"Current time: {_dt.datetime.fromtimestamp(t, _dt.UTC).strftime('%H:%M:%S')}. " + system
        if not append_only and depth == 0 and i == turns // 2 and rng.random() < 0.3:
            tools = tools + [_tool(rng, f"late_tool_{sid}", app.style)]  # a tool added mid-session
        yield t, sid, _body(app, system, tools, msgs)
        if not append_only and depth == 0 and i > 2 and rng.random() < 0.08:
            for k in range(rng.randint(1, 3)):  # parallel subagents inheriting the history
                child_app = app
                yield from _session(rng, child_app, f"{sid}.{k}", t + rng.uniform(1, 5), append_only,
                                    history=msgs, depth=depth + 1)
        tool = rng.choice(app.tools)
        msgs = msgs + _turn(rng, app, i, tool["name"] if app.style == "anthropic" else tool["function"]["name"])
        t += rng.uniform(4, 90)


def generate(target_bytes: int, *, seed: int = 0, append_only: bool = False,
             apps: int = 12, system_words: tuple[int, int] = (300, 900),
             provider: str | None = None) -> Iterator[bytes]:
    """Log lines (each ending in ``\\n``) until about ``target_bytes``;
    ``system_words``: the range of an app's system prompt length in words
    (about 6 characters a word); ``provider`` (``"openai"``,
    ``"anthropic"``, ``"deepseek"``): only that provider's apps among the
    ``apps`` (the providers take turns), so ``apps=3`` gives one app, one
    partition."""
    rng = random.Random(seed)
    pool = [_App(rng, n, system_words) for n in range(apps)]
    if provider is not None:
        pool = [app for app in pool if app.style == provider]
        if not pool:
            raise ValueError(f"no {provider!r} app among {apps}: the providers are "
                             f"{', '.join(sorted({s for s, _, _ in _SETUPS}))}, in turn")
    written = 0
    window = 0
    while written < target_bytes:
        rows: list[tuple[float, str, bytes]] = []
        base = _T0 + window * 1800.0
        for s in range(8):
            app = pool[rng.randrange(len(pool))]
            sid = f"w{window}s{s}"
            for t, session, body in _session(rng, app, sid, base + rng.uniform(0, 600), append_only):
                stamp = _dt.datetime.fromtimestamp(t, _dt.UTC).strftime("%Y-%m-%dT%H:%M:%S.%f")[:-3] + "Z"
                line = orjson.dumps({"time": stamp, "url": app.url, "session": session,
                                     "user": f"user-{s % 3}", "body": body}) + b"\n"
                rows.append((t, session, line))
        rows.sort(key=lambda r: (r[0], r[1]))
        for _, _, line in rows:
            yield line
            written += len(line)
            if written >= target_bytes:
                return
        window += 1


def write_log(path: str, target_bytes: int, **kwargs: Any) -> int:
    """Write :func:`generate`'s lines to ``path``; the bytes written."""
    n = 0
    with open(path, "wb") as fh:
        for line in generate(target_bytes, **kwargs):
            fh.write(line)
            n += len(line)
    return n
