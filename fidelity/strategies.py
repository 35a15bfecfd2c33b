"""Hypothesis strategies for fidelity's canonical data (public API), each named
after what it generates and composable with the others. Text never holds
surrogates or private-use characters; lone surrogates appear only escaped in
``arguments_json`` with ``surrogate_escapes=True``. Table: docs/fork.md, "Strategies".
"""

from __future__ import annotations

import itertools
import json
from collections.abc import Callable, Iterator, Sequence
from functools import cache, lru_cache
from typing import Any, Literal

import orjson

try:
    from hypothesis import strategies as st
except ModuleNotFoundError as exc:  # pragma: no cover - exercised by test_public_api
    if exc.name != "hypothesis":
        raise
    raise ModuleNotFoundError(
        "fidelity.strategies needs hypothesis: pip install 'fidelity[strategies]'", name="hypothesis"
    ) from None

from .model import (
    FrozenDict,
    Message,
    Reasoning,
    Request,
    Route,
    SystemBlock,
    Text,
    Tool,
    ToolCall,
    ToolResult,
    freeze,
)

__all__ = [
    "SPECIAL_TEXTS",
    "unicode_text",
    "identifiers",
    "json_values",
    "json_objects",
    "json_schemas",
    "tool_schemas",
    "tool_lists",
    "tool_arguments_json",
    "tool_calls",
    "tool_result_contents",
    "histories",
    "system_blocks",
    "routes",
    "request_params",
    "requests",
    "directives",
    "dsh_event_logs",
]

Ending = Literal["complete", "in_flight", "user", "empty"]
ENDINGS: tuple[Ending, ...] = ("complete", "in_flight", "user", "empty")

SPECIAL_TEXTS: tuple[str, ...] = (
    "漢字と仮名",  # CJK (Japanese)
    "中文测试，标点。",  # CJK (Chinese, full-width punctuation)
    "한국어",  # Hangul
    "😀",  # emoji outside the BMP (a surrogate pair in UTF-16 / JSON \\u escapes)
    "👩\u200d💻",  # ZWJ sequence
    "🇩🇪",  # regional-indicator flag
    "e\u0301",  # combining acute accent (decomposed é)
    "\u00e9",  # precomposed é: looks like the one above, other bytes
    "a\u0308\u0323",  # stacked combining marks
    "\u200b",  # zero-width space
    "\u2028",  # line separator (escaped by some JSON encoders, not others)
    "</script>",  # HTML-sensitive text (escaped by some encoders)
    '"\\',  # JSON escapes
    "\t\n",  # control characters
    "—",  # em dash (as in the fork placeholder)
)
"""Fragments mixed into :func:`unicode_text`, each a known source of differing bytes."""

_PRIVATE_OR_SURROGATE: tuple[Literal["Cs", "Co"], ...] = ("Cs", "Co")


@cache
def unicode_text(*, min_size: int = 0, max_size: int = 12) -> st.SearchStrategy[str]:
    """Text mixing ASCII, any encodable code point and :data:`SPECIAL_TEXTS`."""
    fragment = st.one_of(
        st.characters(min_codepoint=0x20, max_codepoint=0x7E),
        st.characters(codec="utf-8", exclude_categories=_PRIVATE_OR_SURROGATE),
        st.sampled_from(SPECIAL_TEXTS),
    )
    return st.lists(fragment, min_size=min_size, max_size=max_size).map("".join)


@cache
def identifiers(*, max_size: int = 16) -> st.SearchStrategy[str]:
    """Tool / property names: ``[a-zA-Z_][a-zA-Z0-9_]*``."""
    head = st.sampled_from("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ_")
    tail = st.text(alphabet="abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_", max_size=max_size - 1)
    return st.builds(lambda h, t: h + t, head, tail)


_BOOLEANS = st.booleans()
_ONE_IN_FIVE = st.integers(0, 4).map(lambda n: n == 0)
_ONE_IN_FOUR = st.integers(0, 3).map(lambda n: n == 0)

_scalars = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-(2**53), 2**53),
    st.floats(allow_nan=False, allow_infinity=False, width=64),
    unicode_text(max_size=12),
)


@cache
def json_values(*, max_leaves: int = 12) -> st.SearchStrategy[Any]:
    """Plain JSON values (dicts, lists, scalars); dict keys in arbitrary
    insertion order, which must survive every step of the pipeline."""
    return st.recursive(
        _scalars,
        lambda children: st.lists(children, max_size=4)
        | st.dictionaries(unicode_text(max_size=8), children, max_size=4),
        max_leaves=max_leaves,
    )


@cache
def json_objects(*, max_leaves: int = 12) -> st.SearchStrategy[dict[str, Any]]:
    """Plain JSON objects (the shape of tool arguments)."""
    return st.dictionaries(unicode_text(max_size=8), json_values(max_leaves=max_leaves), max_size=5)


@st.composite
def _ordered(draw: st.DrawFn, entries: list[tuple[str, Any]]) -> dict[str, Any]:
    return dict(draw(st.permutations(entries)))


def json_schemas(*, max_depth: int = 2) -> st.SearchStrategy[dict[str, Any]]:
    """Object schemas (a tool's ``parameters``) whose keys come in a drawn order at every level."""

    @st.composite
    def schema(draw: st.DrawFn, depth: int, kind: str | None = None) -> dict[str, Any]:
        kinds = ["string", "integer", "number", "boolean"] + (["array", "object"] if depth > 0 else [])
        kind = kind or draw(st.sampled_from(kinds))
        entries: list[tuple[str, Any]] = [("type", kind)]
        if draw(_BOOLEANS):
            entries.append(("description", draw(unicode_text(max_size=10))))
        if kind == "string" and draw(_BOOLEANS):
            entries.append(("enum", draw(st.lists(unicode_text(max_size=6), min_size=1, max_size=3, unique=True))))
        if kind == "array":
            entries.append(("items", draw(schema(depth - 1))))
        if kind == "object":
            names = draw(st.lists(identifiers(max_size=10), max_size=4, unique=True))
            properties = {name: draw(schema(depth - 1)) for name in names}
            entries.append(("properties", properties))
            if len(names) > 0 and draw(_BOOLEANS):
                entries.append(("required", draw(st.lists(st.sampled_from(names), min_size=1, unique=True))))
            if draw(_BOOLEANS):
                entries.append(("additionalProperties", False))
        return draw(_ordered(entries))

    return schema(max_depth, "object")


def tool_schemas(*, names: st.SearchStrategy[str] | None = None) -> st.SearchStrategy[Tool]:
    """One :class:`Tool` with a nested, arbitrarily ordered ``parameters``
    schema, maybe a description and maybe ``extra`` keys (``strict``)."""
    return st.builds(
        Tool,
        name=names if names is not None else identifiers(),
        description=st.none() | unicode_text(max_size=12),
        parameters=json_schemas().map(freeze),
        extra=st.sampled_from([FrozenDict(), freeze({"strict": True}), freeze({"strict": False})]),
    )


@cache
def tool_lists(*, min_size: int = 0, max_size: int = 4) -> st.SearchStrategy[tuple[Tool, ...]]:
    """Tuples of :class:`Tool` with unique names, in a drawn order."""
    return st.lists(tool_schemas(), min_size=min_size, max_size=max_size, unique_by=lambda t: t.name).map(tuple)


_argument_objects = st.dictionaries(
    st.sampled_from(["path", "query", "limit", "options", "名前", "b", "a"]) | unicode_text(max_size=6),
    st.recursive(_scalars, lambda children: st.lists(children, max_size=3)
                 | st.dictionaries(unicode_text(max_size=5), children, max_size=3), max_leaves=3),
    max_size=3,
)

_LONE_SURROGATES = ("\ud800", "\udbff", "\udc00", "\udfff", "\ud83d")
#: how real clients write tool arguments
_SPELLINGS: dict[str, Callable[[Any], str]] = {
    "orjson": lambda value: orjson.dumps(value).decode(),
    "spaced-ascii": json.dumps,
    "spaced-utf8": lambda value: json.dumps(value, ensure_ascii=False),
    "compact-ascii": lambda value: json.dumps(value, separators=(",", ":")),
}


@st.composite
def tool_arguments_json(draw: st.DrawFn, *, surrogate_escapes: bool = False) -> tuple[FrozenDict, str]:
    """``(arguments, arguments_json)``: a JSON object and its exact text in one of
    the spellings real clients produce; with ``surrogate_escapes`` a value may be
    a lone surrogate, escaped as ``\\udXXX`` (a model that cut an emoji in half)."""
    arguments = draw(_argument_objects)
    if surrogate_escapes and draw(st.booleans()):
        key = draw(unicode_text(max_size=6))
        arguments = {**arguments, key: draw(st.sampled_from(_LONE_SURROGATES))}
        style = draw(st.sampled_from(["spaced-ascii", "compact-ascii"]))
    else:
        style = draw(st.sampled_from(["orjson", "spaced-ascii", "spaced-utf8", "compact-ascii"]))
    return freeze(arguments), _SPELLINGS[style](arguments)


@lru_cache(maxsize=256)
def _names(names: tuple[str, ...]) -> st.SearchStrategy[str]:
    return st.sampled_from(names) if names else identifiers()


@st.composite
def tool_calls(
    draw: st.DrawFn,
    *,
    call_id: str | None = None,
    names: Sequence[str] = (),
    surrogate_escapes: bool = False,
) -> ToolCall:
    """One :class:`ToolCall` (``call_id`` fixed when given, the name from ``names``
    when given); half of them carry ``arguments_json``."""
    name = draw(_names(tuple(names)))
    ident = call_id if call_id is not None else "call_" + draw(_ID_TAILS)
    arguments, text = draw(tool_arguments_json(surrogate_escapes=surrogate_escapes))
    return ToolCall(ident, name, arguments, text if draw(_BOOLEANS) else None)


@cache
def tool_result_contents() -> st.SearchStrategy[Any]:
    """A result's content: text, a tuple of :class:`Text` parts, or a
    Gemini-style ``response`` object (``{"output": …}`` / ``{"error": …}``)."""
    text = unicode_text(max_size=12)
    return st.one_of(
        text,
        st.lists(text.map(Text), min_size=1, max_size=2).map(tuple),
        st.builds(lambda key, value: freeze({key: value}), st.sampled_from(["output", "error"]), text),
    )


_ID_TAILS = st.text(alphabet="abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789", max_size=12)


def _assistant_parts(draw: st.DrawFn) -> tuple[Any, ...]:
    parts: list[Any] = []
    if draw(_BOOLEANS):
        parts.append(Reasoning(draw(unicode_text(max_size=12)), draw(st.none() | st.just("sig_" + "A" * 8))))
    if draw(_BOOLEANS):
        parts.append(Text(draw(unicode_text(max_size=12))))
    return tuple(parts)


def _calls_message(draw: st.DrawFn, ids: Iterator[int], names: Sequence[str], max_parallel: int,
                   surrogate_escapes: bool) -> Message:
    """An assistant message with parallel calls; ids unique in the history (a running number, a drawn tail)."""
    count = draw(st.integers(1, max_parallel))
    calls = tuple(draw(tool_calls(call_id=f"call_{next(ids):02d}_" + draw(_ID_TAILS), names=names,
                                  surrogate_escapes=surrogate_escapes)) for _ in range(count))
    return Message("assistant", _assistant_parts(draw) + calls)


def _results(draw: st.DrawFn, message: Message, tool_results_in: str) -> tuple[Message, ...]:
    calls = list(message.tool_calls())
    order = draw(st.permutations(calls)) if draw(_ONE_IN_FOUR) else calls
    results = [
        ToolResult(c.id, c.name if draw(_BOOLEANS) else None, draw(tool_result_contents()), draw(_ONE_IN_FIVE))
        for c in order
    ]
    if tool_results_in == "tool":
        return tuple(Message("tool", (r,)) for r in results)
    return (Message("user", tuple(results)),)


_PROMPT_TEXTS = st.lists(unicode_text(min_size=1, max_size=12), min_size=1, max_size=2)


def _user_prompt(draw: st.DrawFn) -> Message:
    texts = draw(_PROMPT_TEXTS)
    return Message("user", tuple(Text(t) for t in texts))


@st.composite
def histories(
    draw: st.DrawFn,
    *,
    min_turns: int = 0,
    max_turns: int = 2,
    max_steps: int = 2,
    max_parallel: int = 2,
    endings: Sequence[Ending] = ENDINGS,
    tool_names: Sequence[str] = (),
    tool_results_in: Literal["user", "tool"] = "user",
    surrogate_escapes: bool = False,
) -> tuple[Message, ...]:
    """Balanced histories: ``min_turns``..``max_turns`` completed turns (a user
    prompt, up to ``max_steps`` steps of 1..``max_parallel`` parallel calls and
    their results, a closing assistant message), then one of ``endings``:
    ``complete``, ``in_flight`` (open calls), ``user`` (a prompt or unanswered
    results) or ``empty``. Results sit in user messages, or with
    ``tool_results_in="tool"`` in one ``tool`` message each; call ids are unique."""
    ending = draw(st.sampled_from(list(endings)))
    if ending == "empty":
        return ()
    ids = itertools.count(1)
    messages: list[Message] = []

    def steps(close: bool) -> None:
        for _ in range(draw(st.integers(0, max_steps))):
            call_message = _calls_message(draw, ids, tool_names, max_parallel, surrogate_escapes)
            messages.append(call_message)
            messages.extend(_results(draw, call_message, tool_results_in))
        if close:
            final = _assistant_parts(draw) or (Text(draw(unicode_text(min_size=1, max_size=12))),)
            messages.append(Message("assistant", final))

    for _ in range(draw(st.integers(min_turns, max_turns))):
        messages.append(_user_prompt(draw))
        steps(close=True)
    if ending == "in_flight" or (ending == "user" and draw(_BOOLEANS)):
        messages.append(_user_prompt(draw))
        steps(close=False)
        call_message = _calls_message(draw, ids, tool_names, max_parallel, surrogate_escapes)
        messages.append(call_message)
        if ending == "user":
            messages.extend(_results(draw, call_message, tool_results_in))
    elif ending == "user":
        messages.append(_user_prompt(draw))
    return tuple(messages)


@cache
def system_blocks(*, max_size: int = 3) -> st.SearchStrategy[tuple[SystemBlock, ...]]:
    """System prompts: 0..``max_size`` blocks, some named sections (DSH
    ``tool:report`` style), some with an Anthropic ``cache_control``."""
    block = st.builds(
        SystemBlock,
        text=unicode_text(min_size=1, max_size=16),
        name=st.none() | st.sampled_from(["base", "tool:report", "sandbox:policy", "env"]),
        cache_control=st.none() | st.just(freeze({"type": "ephemeral"})),
    )
    return st.lists(block, max_size=max_size).map(tuple)


ROUTES: tuple[Route, ...] = (
    Route("openai", "gpt-4.1"),
    Route("anthropic", "claude-sonnet-4-5"),
    Route("deepseek", "deepseek-v4-flash"),
    Route("gemini", "gemini-2.5-pro"),
    Route("dashscope", "qwen3-coder-plus"),
    Route("vllm", "Qwen/Qwen3-8B"),
)


def routes() -> st.SearchStrategy[Route]:
    """One of a few realistic provider/model pairs."""
    return st.sampled_from(ROUTES)


_PARAMS: tuple[tuple[str, st.SearchStrategy[Any]], ...] = (
    ("max_tokens", st.integers(1, 65536)),
    ("temperature", st.sampled_from([0, 0.2, 0.7, 1.0])),
    ("top_p", st.sampled_from([0.9, 0.95, 1.0])),
    ("stream", st.booleans()),
    ("tool_choice", st.sampled_from(["auto", "none", "required"])),
    ("reasoning_effort", st.sampled_from(["low", "medium", "high"])),
    ("thinking", st.sampled_from([{"type": "enabled", "budget_tokens": 1024}, {"type": "disabled"}])),
)


@st.composite
def request_params(draw: st.DrawFn) -> FrozenDict:
    """A drawn subset of common request parameters in a drawn order."""
    chosen = draw(st.lists(st.sampled_from(_PARAMS), unique_by=lambda kv: kv[0], max_size=len(_PARAMS)))
    frozen: FrozenDict = freeze({key: draw(values) for key, values in chosen})
    return frozen


@st.composite
def requests(
    draw: st.DrawFn,
    *,
    route: st.SearchStrategy[Route] | None = None,
    system: st.SearchStrategy[tuple[SystemBlock, ...]] | None = None,
    tools: st.SearchStrategy[tuple[Tool, ...]] | None = None,
    messages: st.SearchStrategy[tuple[Message, ...]] | None = None,
    params: st.SearchStrategy[FrozenDict] | None = None,
    endings: Sequence[Ending] = ("user",),
    tool_results_in: Literal["user", "tool"] = "user",
    surrogate_escapes: bool = False,
) -> Request:
    """Whole :class:`Request` values, each part replaceable by your own strategy;
    by default ready to send (a history ending with a user message, calls naming
    the request's tools). ``endings=("complete", "in_flight")`` gives parent snapshots."""
    tool_list = draw(tools if tools is not None else tool_lists())
    history = draw(
        messages
        if messages is not None
        else histories(
            endings=endings,
            tool_names=[t.name for t in tool_list],
            tool_results_in=tool_results_in,
            surrogate_escapes=surrogate_escapes,
        )
    )
    return Request(
        route=draw(route if route is not None else routes()),
        system=draw(system if system is not None else system_blocks()),
        tools=tool_list,
        messages=history,
        params=draw(params if params is not None else request_params()),
    )


@cache
def directives() -> st.SearchStrategy[str]:
    """Fork directives: non-empty unicode text."""
    return unicode_text(min_size=1, max_size=12)


# --------------------------------------------------------------------------
# DeepSeek Harness session logs
# --------------------------------------------------------------------------


_CHUNK_TEXTS = st.lists(unicode_text(min_size=1, max_size=4), min_size=1, max_size=4)


def _dsh_text(text: str) -> list[dict[str, Any]]:
    return [{"type": "text", "text": text}]


@st.composite
def dsh_event_logs(
    draw: st.DrawFn,
    *,
    min_turns: int = 0,
    max_turns: int = 2,
    in_flight: bool | None = None,
    header: bool = True,
) -> list[dict[str, Any]]:
    """DeepSeek Harness session logs as plain ``dict`` events, shaped like the
    recorded ``subagent-fork-in-process`` session (``../shared/real/README.md``):
    ``min_turns``..``max_turns`` complete turns; with ``in_flight`` (drawn when
    ``None``) a last open turn whose calls have some or none of their results."""
    events: list[dict[str, Any]] = []
    if header:
        events.append({"type": "session", "version": 0, "id": "00000000-0000-4000-8000-000000000000",
                       "createdAt": 1783352134832, "cwd": "{{cwd}}", "delegationDepth": 0})
    counter = [0]

    def turn(number: int, complete: bool) -> None:
        events.append({"type": "turn/start", "data": {"turn": number}})
        steps = draw(st.integers(1, 2))
        for step in range(1, steps + 1):
            last = step == steps
            events.append({"type": "step/start", "data": {"turn": number, "step": step}})
            if step == 1:
                events.append({"type": "user/message", "data": {
                    "content": _dsh_text(draw(unicode_text(min_size=1, max_size=12))),
                    "source": {"kind": "user"}, "role": "user", "id": f"u-{number}"}, "surfaceOp": "append"})
                events.append({"type": "request/header", "data": {"header": {
                    "config": {"provider": "deepseek-official", "model": "deepseek-v4-flash"},
                    "system": "{{system}}", "tools": "{{tools}}"}, "reason": "initial" if number == 1 else "resume"}})
            texts = draw(_CHUNK_TEXTS)
            events.append({"type": "reasoning-chunks", "data": {"turn": number, "step": step, "index": 0,
                                                                "dt": [0] * (len(texts) - 1), "texts": texts}})
            with_calls = not (complete and last)
            calls = []
            if with_calls:
                for _ in range(draw(st.integers(1, 3))):
                    counter[0] += 1
                    calls.append((f"call_{counter[0]:02d}", draw(identifiers(max_size=10)),
                                  json.dumps(draw(_argument_objects))))
            content: list[dict[str, Any]] = [{"type": "reasoning", "text": "".join(texts)}]
            content += [{"type": "tool-call", "id": i, "name": n, "arguments": a} for i, n, a in calls]
            if not calls:
                content.append({"type": "text", "text": draw(unicode_text(min_size=1, max_size=20))})
            events.append({"type": "assistant/message", "data": {"turn": number, "step": step, "message": {
                "role": "assistant", "content": content,
                "source": {"kind": "model", "provider": "deepseek-official", "model": "deepseek-v4-flash"}}},
                "surfaceOp": "append"})
            answered = len(calls) if complete or not last else draw(st.integers(0, len(calls)))
            for index, (call_id, name, arguments) in enumerate(calls):
                events.append({"type": "tool/call", "data": {"turn": number, "step": step, "callId": call_id,
                                                             "name": name, "arguments": arguments}})
                if index < answered:
                    events.append({"type": "tool/result", "data": {"turn": number, "step": step, "message": {
                        "source": {"kind": "tool", "callId": call_id},
                        "content": [{"type": "tool-result", "toolCallId": call_id,
                                     "content": _dsh_text(draw(unicode_text(max_size=10))),
                                     "isError": draw(_ONE_IN_FIVE)}],
                        "role": "user"}}, "surfaceOp": "append"})
            if complete or not last:
                events.append({"type": "step/end", "data": {"turn": number, "step": step}})
        if complete:
            events.append({"type": "turn/end", "data": {"turn": number, "reason": {"kind": "completed"}}})

    completed = draw(st.integers(min_turns, max_turns))
    for number in range(1, completed + 1):
        turn(number, complete=True)
    if in_flight if in_flight is not None else draw(_BOOLEANS):
        turn(completed + 1, complete=False)
    return events
