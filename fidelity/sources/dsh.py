"""DeepSeek Harness (DSH) session event logs: read them, and rebuild the
request the harness sent at any step.

A DSH session log is JSONL: line 1 is the session header, every later line
one event ``{"type": ..., "data": {...}}``. A child session (fork or spawn)
lives beside its parent as ``session.<n>.jsonl``; its header names the
parent (``parentSession``) and, for a fork, how many parent events it copied
(``seedLength``); the copied events end with ``session/end-seed``.

What reaches the model is the *surface*: the ordered list of message events
that carry ``surfaceOp``. ``"append"`` adds the event's message at the end;
``{"op": "replace", "start": s, "end": e}`` (context compaction) replaces the
surface nodes from event sequence number ``s`` to ``e`` with the new
message. ``agent/inbox/spliced`` is only the delivery queue: a queued
message reaches the surface later as a ``user/message`` with its own
``surfaceOp`` (or never, when the turn fails first). Runtime-context
"snapshot" user messages from the system-prompt plugin are ordinary surface
nodes and stay in place; a newer snapshot is appended after them, it does
not delete them.

Event sequence numbers (``seq``) count events after the header from 0, with
the packed rows ``text-chunks`` / ``reasoning-chunks`` / ``tool-call-chunks``
standing for one event per element of ``texts`` / ``args``. They are what
``sourceEventSeqs``, ``messageSeqs``, ``seedLength`` and ``surfaceOp``
ranges refer to.

Sources: the format notes in ``../shared/real/README.md``; the recorded
logs of deepseek-ai/deepseek-harness @ b150a551b8 (MIT); that project's
``acp-snapshot`` helpers (``parseSystemPromptSnapshot``,
``parseToolSchemasSnapshot``, ``pinningHeaderPayloads``), which define the
sidecar formats and which ``request/header`` reasons own a sidecar revision.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Iterable, Mapping, Sequence

import orjson

from ..errors import InputError
from ..jsonio import load, loads, read_bytes
from ..model import (
    EMPTY,
    FrozenDict,
    Image,
    Message,
    Part,
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
    "Event",
    "Usage",
    "RequestHeader",
    "Step",
    "Turn",
    "Session",
    "SessionGroup",
    "Sidecars",
    "read_session",
    "find_sessions",
    "sidecars",
    "step_messages",
    "step_reply",
    "step_request",
    "header_tools",
    "PACKED_ROWS",
    "SYSTEM_PLACEHOLDER",
    "TOOLS_PLACEHOLDER",
]

#: Packed chunk rows and the list whose length is the number of events each stands for.
PACKED_ROWS: Mapping[str, str] = FrozenDict(
    {"text-chunks": "texts", "reasoning-chunks": "texts", "tool-call-chunks": "args"}
)
SYSTEM_PLACEHOLDER = "{{system}}"
TOOLS_PLACEHOLDER = "{{tools}}"
#: Surface message events (the DSH ``surfaceEventMessage`` set).
_SURFACE_TYPES = ("user/message", "system/message", "assistant/message", "tool/result")
_CHILD_RE = re.compile(r"^session\.([1-9][0-9]*)\.jsonl$")
#: Separator between the initial prompt and each later prompt in a prompt sidecar
#: (DSH ``formatSystemPromptSnapshot``).
_PROMPT_CHANGE_RE = re.compile(r"\n<!-- system/message change [1-9]\d* -->\n\n")
#: Characters JavaScript's ``String.prototype.trimEnd`` removes (WhiteSpace and
#: LineTerminator of ECMA-262 §12.2/§12.3); DSH replay hydrates ``{{system}}``
#: with ``prompt.trimEnd()``.
_JS_WHITESPACE = (
    "\t\n\v\f\r \u00a0\u1680\u2000\u2001\u2002\u2003\u2004\u2005\u2006\u2007\u2008"
    "\u2009\u200a\u2028\u2029\u202f\u205f\u3000\ufeff"
)


# --------------------------------------------------------------------------- values


@dataclass(frozen=True)
class Event:
    """One log line after the header.

    ``seq`` is the event's sequence number and ``span`` how many sequence
    numbers it occupies (more than one only for packed chunk rows).
    ``record`` is the whole line, frozen, key order kept.
    """

    line: int
    seq: int
    span: int
    type: str
    data: FrozenDict
    record: FrozenDict

    @property
    def surface_op(self) -> Any:
        return self.record.get("surfaceOp")


@dataclass(frozen=True)
class Usage:
    """Token usage DSH recorded for one model request.

    ``input_tokens`` are the prompt tokens DeepSeek did *not* serve from its
    cache (``prompt_cache_miss_tokens``), ``cache_read_tokens`` those it did
    (``prompt_cache_hit_tokens``); their sum is the prompt length.
    """

    input_tokens: int | None = None
    cache_read_tokens: int | None = None
    output_tokens: int | None = None
    reasoning_tokens: int | None = None

    @property
    def prompt_tokens(self) -> int | None:
        if self.input_tokens is None:
            return None
        return self.input_tokens + (self.cache_read_tokens or 0)


@dataclass(frozen=True)
class RequestHeader:
    """A ``request/header`` event: the request's route and fixed head.

    ``system`` / ``tools`` are ``None`` where the log carries the
    ``{{system}}`` / ``{{tools}}`` placeholders (the text is in sidecars).
    ``revision`` counts the pinning headers (reason other than ``series``)
    before this one: 0 for the first, which owns a sidecar's ``initial``;
    revision *r* owns ``changes[r-1]``.
    """

    line: int
    provider: str
    model: str
    reason: str | None
    config: FrozenDict
    system: str | None
    tools: tuple[FrozenDict, ...] | None
    message_prefix: Any
    revision: int
    record: FrozenDict


@dataclass(frozen=True)
class Step:
    """One model request inside a turn.

    ``request_index`` is the index (into ``Session.events``) at which the
    request was cut: the step's ``assistant/message`` when it has one, else
    its ``step/end``, else the end of the log (in flight). The surface built
    from the events before it is what the model saw.
    """

    turn: int
    step: int
    start_line: int
    end_line: int | None
    header: RequestHeader | None
    usage: Usage | None
    finish: FrozenDict | None
    message_line: int | None
    request_index: int

    @property
    def completed(self) -> bool:
        return self.end_line is not None


@dataclass(frozen=True)
class Turn:
    """``turn/start`` .. ``turn/end``; ``end_line`` is ``None`` while in flight."""

    turn: int
    start_line: int
    end_line: int | None
    reason: FrozenDict | None
    steps: tuple[Step, ...]

    @property
    def completed(self) -> bool:
        return self.end_line is not None and (self.reason or EMPTY).get("kind") == "completed"

    @property
    def ended(self) -> bool:
        return self.end_line is not None


@dataclass(frozen=True)
class Session:
    """A parsed session log. Build with :func:`read_session`."""

    path: Path
    header: FrozenDict
    events: tuple[Event, ...]
    turns: tuple[Turn, ...]
    #: child number from the file name ``session.<n>.jsonl``; 0 for ``session.jsonl``
    index: int = 0
    _messages: tuple[tuple[int, Message | None], ...] = field(default=(), repr=False, compare=False)

    @property
    def id(self) -> str:
        return self.header["id"]

    def surface_messages(self) -> tuple[tuple[int, Message | None], ...]:
        """``(request index, message)`` of every surface event in log order
        (``None`` for an event that ends a message without adding one)."""
        return self._messages

    @property
    def parent_id(self) -> str | None:
        return self.header.get("parentSession")

    @property
    def seed_length(self) -> int | None:
        return self.header.get("seedLength")

    @property
    def origin(self) -> str | None:
        return self.header.get("origin")

    @property
    def is_child(self) -> bool:
        return self.parent_id is not None

    def seed_events(self) -> tuple[Event, ...]:
        """Events before ``session/end-seed`` (empty when there is none)."""
        for i, event in enumerate(self.events):
            if event.type == "session/end-seed":
                return self.events[:i]
        return ()

    def turn(self, number: int) -> Turn:
        for t in self.turns:
            if t.turn == number:
                return t
        raise InputError(f"no turn {number} (turns: {[t.turn for t in self.turns]})", path=self.path)

    def step(self, turn: int, step: int) -> Step:
        for s in self.turn(turn).steps:
            if s.step == step:
                return s
        raise InputError(f"turn {turn} has no step {step}", path=self.path)

    def steps(self) -> tuple[Step, ...]:
        return tuple(s for t in self.turns for s in t.steps)


@dataclass(frozen=True)
class SessionGroup:
    """One scenario folder: the parent ``session.jsonl`` and its children
    ``session.<n>.jsonl`` in order of ``n``. ``parent`` is ``None`` when
    only children are present."""

    directory: Path
    parent: Session | None
    children: tuple[Session, ...]

    @property
    def name(self) -> str:
        return self.directory.name

    def sessions(self) -> tuple[Session, ...]:
        return ((self.parent,) if self.parent else ()) + self.children


# --------------------------------------------------------------------------- reading


def _fail(problem: str, path: Path, line: int | None) -> InputError:
    return InputError(problem, path=path, line=line)


def _obj(value: Any, what: str, path: Path, line: int) -> FrozenDict:
    if not isinstance(value, dict):
        raise _fail(f"{what} must be an object, got {type(value).__name__}", path, line)
    return value  # type: ignore[return-value]


def _int(value: Any, what: str, path: Path, line: int) -> int:
    if not isinstance(value, int) or isinstance(value, bool):
        raise _fail(f"{what} must be an integer, got {value!r}", path, line)
    return value


def _lines(path: Path) -> list[tuple[int, Any]]:
    data = read_bytes(path)
    if not data.strip():
        raise InputError("empty file, expected a DSH session header on line 1", path=path)
    out = []
    for number, raw in enumerate(data.split(b"\n"), start=1):
        if raw.strip():
            out.append((number, freeze(loads(raw, path=path, line=number))))
    return out


def _usage(value: Any, path: Path, line: int) -> Usage | None:
    if value is None:
        return None
    value = _obj(value, "usage", path, line)
    fields = {}
    for key, name in (("inputTokens", "input_tokens"), ("cacheReadTokens", "cache_read_tokens"),
                      ("outputTokens", "output_tokens"), ("reasoningTokens", "reasoning_tokens")):
        if key in value:
            fields[name] = _int(value[key], f"usage.{key}", path, line)
    return Usage(**fields)


def _header(event: Event, revision: int, path: Path) -> RequestHeader:
    data = event.data
    head = _obj(data.get("header"), "request/header data.header", path, event.line)
    config = _obj(head.get("config"), "request/header header.config", path, event.line)
    provider, model = config.get("provider"), config.get("model")
    if not isinstance(provider, str) or not isinstance(model, str):
        raise _fail("request/header config needs string provider and model", path, event.line)
    system = head.get("system")
    if system == SYSTEM_PLACEHOLDER:
        system = None
    elif system is not None and not isinstance(system, str):
        raise _fail("request/header system must be a string", path, event.line)
    tools = head.get("tools")
    if tools == TOOLS_PLACEHOLDER:
        tools = None
    elif tools is not None:
        if not isinstance(tools, tuple) or not all(isinstance(t, dict) for t in tools):
            raise _fail("request/header tools must be a list of tool schemas", path, event.line)
    reason = data.get("reason")
    return RequestHeader(
        line=event.line, provider=provider, model=model,
        reason=reason if isinstance(reason, str) else None, config=config,
        system=system, tools=tools, message_prefix=head.get("messagePrefix"),
        revision=revision, record=event.record,
    )


def read_session(path: str | Path) -> Session:
    """Read one DSH session log.

    Raises :class:`InputError` naming the file and line for a line that is
    not JSON, an event that is not an object with a string ``type``, a
    missing or malformed header, a ``turn/end``/``step/end`` with no matching
    start, a tool result whose call was never made, a ``surfaceOp`` that
    names unknown events, or a malformed message. A turn with no
    ``turn/end`` is fine: it is in flight.
    """
    p = Path(path)
    rows = _lines(p)
    first_line, header = rows[0]
    if not isinstance(header, dict) or header.get("type") != "session":
        raise _fail('missing session header: line 1 must be {"type":"session", ...}', p, first_line)
    if not isinstance(header.get("id"), str):
        raise _fail("session header needs a string id", p, first_line)
    if "seedLength" in header:
        _int(header["seedLength"], "seedLength", p, first_line)

    events: list[Event] = []
    seq = 0
    for line, record in rows[1:]:
        record = _obj(record, "event", p, line)
        kind = record.get("type")
        if not isinstance(kind, str):
            raise _fail("event needs a string type", p, line)
        if kind == "session":
            raise _fail("a second session header", p, line)
        data = record.get("data", EMPTY)
        data = _obj(data, f"{kind} data", p, line)
        span = 1
        if kind in PACKED_ROWS:
            items = data.get(PACKED_ROWS[kind])
            if not isinstance(items, tuple):
                raise _fail(f"{kind} needs a list {PACKED_ROWS[kind]!r}", p, line)
            span = len(items)
        events.append(Event(line=line, seq=seq, span=span, type=kind, data=data, record=record))
        seq += span

    messages = _surface_messages(events, p)
    turns = _turns(events, p)
    m = _CHILD_RE.match(p.name)
    session = Session(path=p, header=header, events=tuple(events), turns=turns,
                      index=int(m.group(1)) if m else 0, _messages=messages)
    _surface_until(session, len(events))  # validate every surfaceOp now, not at first use
    return session


def _turns(events: Sequence[Event], path: Path) -> tuple[Turn, ...]:
    turns: list[Turn] = []
    open_turn: dict[str, Any] | None = None
    open_step: dict[str, Any] | None = None
    header: RequestHeader | None = None
    revision = -1
    seen_turns: set[int] = set()

    def close_step(end_line: int | None, end_index: int) -> None:
        nonlocal open_step
        assert open_step is not None and open_turn is not None
        cut = open_step["message_index"] if open_step["message_index"] is not None else end_index
        open_turn["steps"].append(Step(
            turn=open_step["turn"], step=open_step["step"], start_line=open_step["line"],
            end_line=end_line, header=open_step["header"], usage=open_step["usage"],
            finish=open_step["finish"], message_line=open_step["message_line"], request_index=cut,
        ))
        open_step = None

    def close_turn(end_line: int | None, reason: Any, end_index: int) -> None:
        nonlocal open_turn
        assert open_turn is not None
        if open_step is not None:
            close_step(None, end_index)
        turns.append(Turn(turn=open_turn["turn"], start_line=open_turn["line"], end_line=end_line,
                          reason=reason, steps=tuple(open_turn["steps"])))
        open_turn = None

    for index, event in enumerate(events):
        kind, data = event.type, event.data
        if kind == "request/header":
            if data.get("reason") != "series":
                revision += 1
            header = _header(event, max(revision, 0), path)
            if open_step is not None and open_step["message_index"] is None:
                open_step["header"] = header
        elif kind == "turn/start":
            number = _int(data.get("turn"), "turn/start data.turn", path, event.line)
            if open_turn is not None:
                raise _fail(f"turn {number} starts while turn {open_turn['turn']} is still open", path, event.line)
            if number in seen_turns:
                raise _fail(f"turn {number} starts twice", path, event.line)
            seen_turns.add(number)
            open_turn = {"turn": number, "line": event.line, "steps": []}
        elif kind == "turn/end":
            number = _int(data.get("turn"), "turn/end data.turn", path, event.line)
            if open_turn is None or open_turn["turn"] != number:
                raise _fail(f"turn/end for turn {number}, which is not open", path, event.line)
            close_turn(event.line, data.get("reason"), index)
        elif kind == "step/start":
            if open_turn is None:
                raise _fail("step/start outside a turn", path, event.line)
            if open_step is not None:
                close_step(None, index)
            number = _int(data.get("step"), "step/start data.step", path, event.line)
            open_step = {"turn": open_turn["turn"], "step": number, "line": event.line, "header": header,
                         "usage": None, "finish": None, "message_line": None, "message_index": None}
        elif kind == "step/end":
            number = _int(data.get("step"), "step/end data.step", path, event.line)
            if open_step is None or open_step["step"] != number:
                raise _fail(f"step/end for step {number}, which is not open", path, event.line)
            close_step(event.line, index)
        elif kind == "assistant/chunk" and open_step is not None:
            chunk = data.get("chunk")
            if isinstance(chunk, dict) and open_step["message_index"] is None:
                if chunk.get("type") == "usage":
                    open_step["usage"] = _usage(chunk.get("usage"), path, event.line)
                elif chunk.get("type") == "finish":
                    open_step["finish"] = chunk.get("reason")
        elif kind == "assistant/message" and open_step is not None:
            open_step["message_index"] = index
            open_step["message_line"] = event.line
            if "usage" in data:
                open_step["usage"] = _usage(data.get("usage"), path, event.line)
    if open_turn is not None:
        close_turn(None, None, len(events))
    return tuple(turns)


# --------------------------------------------------------------------------- messages


def _content(value: Any, what: str, path: Path, line: int) -> tuple[FrozenDict, ...]:
    if not isinstance(value, tuple) or not all(isinstance(v, dict) for v in value):
        raise _fail(f"{what} must be a list of content parts", path, line)
    return value


def _text_or_image(part: FrozenDict, what: str, path: Path, line: int) -> Part:
    kind = part.get("type")
    if kind == "text" and isinstance(part.get("text"), str):
        return Text(part["text"])
    if kind == "image":
        url = part.get("url") or part.get("data")
        if isinstance(url, str):
            media = part.get("mediaType") or part.get("mimeType")
            if not url.startswith(("data:", "http:", "https:")) and isinstance(media, str):
                url = f"data:{media};base64,{url}"
            return Image(url=url, media_type=media if isinstance(media, str) else None)
    raise _fail(f"{what}: unsupported content part {orjson.dumps(part)[:80].decode()}", path, line)


def _tool_result_content(parts: tuple[FrozenDict, ...], path: Path, line: int) -> Any:
    converted = tuple(_text_or_image(p, "tool result", path, line) for p in parts)
    if all(isinstance(p, Text) for p in converted):
        return "".join(p.text for p in converted)  # type: ignore[union-attr]
    return converted


def _message_of(event: Event, calls: dict[str, str], path: Path) -> list[Message]:
    """The canonical message(s) one surface event carries."""
    kind, data, line = event.type, event.data, event.line
    if kind == "user/message":
        parts = _content(data.get("content"), "user/message content", path, line)
        return [Message("user", tuple(_text_or_image(p, "user/message", path, line) for p in parts))]
    if kind == "system/message":
        message = _obj(data.get("message", data), "system/message message", path, line)
        parts = _content(message.get("content"), "system/message content", path, line)
        return [Message("system", tuple(_text_or_image(p, "system/message", path, line) for p in parts))]
    if kind == "assistant/message":
        message = data.get("message", data)  # new form nests it; the older apps/web form does not
        message = _obj(message, "assistant/message message", path, line)
        out: list[Part] = []
        for part in _content(message.get("content"), "assistant/message content", path, line):
            ptype = part.get("type")
            if ptype == "reasoning" and isinstance(part.get("text"), str):
                out.append(Reasoning(part["text"]))
            elif ptype == "text" and isinstance(part.get("text"), str):
                out.append(Text(part["text"]))
            elif ptype == "tool-call":
                cid, name, args = part.get("id"), part.get("name"), part.get("arguments")
                if not (isinstance(cid, str) and isinstance(name, str) and isinstance(args, str)):
                    raise _fail("tool-call part needs string id, name and arguments", path, line)
                try:
                    parsed = orjson.loads(args)
                except orjson.JSONDecodeError:
                    parsed = EMPTY  # the model emitted invalid JSON; the exact string is kept
                calls[cid] = name
                out.append(ToolCall(id=cid, name=name, arguments=parsed, arguments_json=args))
            else:
                raise _fail(f"assistant/message: unsupported content part type {ptype!r}", path, line)
        return [Message("assistant", tuple(out))]
    # tool/result
    if "message" in data:
        message = _obj(data["message"], "tool/result message", path, line)
        results = []
        for part in _content(message.get("content"), "tool/result content", path, line):
            if part.get("type") != "tool-result" or not isinstance(part.get("toolCallId"), str):
                raise _fail("tool/result content must be tool-result parts with a toolCallId", path, line)
            results.append((part["toolCallId"], part.get("content", ()), part.get("isError", False)))
    else:  # older form: {"callId", "content", "isError"} directly in data
        if not isinstance(data.get("callId"), str):
            raise _fail("tool/result needs a callId", path, line)
        results = [(data["callId"], data.get("content", ()), data.get("isError", False))]
    out_msgs = []
    for call_id, content, is_error in results:
        if call_id not in calls:
            raise _fail(f"tool result for call {call_id!r}, which no earlier assistant message made", path, line)
        body = content if isinstance(content, str) else _tool_result_content(
            _content(content, "tool-result content", path, line), path, line)
        out_msgs.append(Message("tool", (ToolResult(call_id=call_id, name=calls[call_id], content=body,
                                                    is_error=bool(is_error)),)))
    return out_msgs


def _surface_messages(events: Sequence[Event], path: Path) -> tuple[tuple[int, Message | None], ...]:
    """Convert every surface event once (validating it); index -> message(s)."""
    calls: dict[str, str] = {}
    out: list[tuple[int, Message | None]] = []
    for index, event in enumerate(events):
        if event.type == "tool/call":
            cid, name = event.data.get("callId"), event.data.get("name")
            if isinstance(cid, str) and isinstance(name, str):
                calls.setdefault(cid, name)
        if event.type in _SURFACE_TYPES and event.surface_op is not None:
            for message in _message_of(event, calls, path):
                out.append((index, message))
    return tuple(out)


def _surface_until(session: Session, cut: int) -> list[Message]:
    """Apply surface operations of events ``[0, cut)`` and return the surface."""
    by_index: dict[int, list[Message]] = {}
    for index, message in session._messages:
        if message is not None:
            by_index.setdefault(index, []).append(message)
    nodes: list[tuple[int, int, list[Message]]] = []  # (seq, line, messages)
    for index in sorted(i for i in by_index if i < cut):
        event = session.events[index]
        op = event.surface_op
        entry = (event.seq, event.line, by_index[index])
        if op == "append":
            nodes.append(entry)
        elif isinstance(op, dict) and op.get("op") == "replace":
            start, end = op.get("start"), op.get("end")
            seqs = [n[0] for n in nodes]
            if start not in seqs or end not in seqs:
                raise _fail(f"surfaceOp replace names events {start}..{end}, not on the surface", session.path,
                            event.line)
            a, b = seqs.index(start), seqs.index(end)
            if b < a:
                raise _fail(f"surfaceOp replace range {start}..{end} runs backwards", session.path, event.line)
            nodes[a:b + 1] = [entry]
        elif isinstance(op, dict) and op.get("op") == "append":
            nodes.append(entry)
        else:
            raise _fail(f"unsupported surfaceOp {orjson.dumps(op).decode()}", session.path, event.line)
    return [m for node in nodes for m in node[2]]


def step_messages(session: Session, turn: int, step: int) -> tuple[Message, ...]:
    """The conversation messages the harness sent at ``(turn, step)``.

    The surface (see the module docstring) built from every event before the
    step's request cut: the seed of a child included, compaction
    replacements applied, runtime-context snapshot messages kept in place.
    """
    s = session.step(turn, step)
    return tuple(_surface_until(session, s.request_index))


def step_reply(session: Session, turn: int, step: int) -> Message | None:
    """The assistant message the model produced at ``(turn, step)``: the
    surface message recorded at the step's request cut, or ``None`` when the
    step has none (in flight, failed). DeepSeek caches it after the step's
    prompt, so the next request can read it from the cache."""
    s = session.step(turn, step)
    for index, message in session._messages:
        if index == s.request_index and message is not None and message.role == "assistant":
            return message
    return None


# --------------------------------------------------------------------------- requests


def _family(provider: str) -> str:
    """DSH provider ids (``deepseek-official``, ``deepseek``) -> cache/price family."""
    return "deepseek" if provider.startswith("deepseek") else provider


def _tool(value: Any) -> Tool:
    if isinstance(value, Tool):
        return value
    if not isinstance(value, dict) or not isinstance(value.get("name"), str):
        raise InputError("a tool schema must be an object with a string name")
    extra = {k: v for k, v in value.items() if k not in ("name", "description", "parameters")}
    return Tool(name=value["name"], description=value.get("description"), parameters=value.get("parameters"),
                extra=freeze(extra))


def header_tools(schemas: Iterable[Any]) -> tuple[Tool, ...]:
    """DSH tool schemas ``{name, description, parameters}`` -> :class:`Tool`, key order kept."""
    return tuple(_tool(s) for s in schemas)


def step_request(
    session: Session,
    turn: int,
    step: int,
    system: str | None = None,
    tools: Sequence[Any] | None = None,
    *,
    sidecars: "Sidecars | None" = None,
) -> Request:
    """The canonical request the harness sent at ``(turn, step)``.

    Route from the step's ``request/header`` (provider ``deepseek-official``
    maps to family ``deepseek``); ``system`` as one :class:`SystemBlock`;
    ``tools`` as :class:`Tool` objects keeping schema key order. Where
    ``system``/``tools`` are not given they come from ``sidecars`` (the
    header's revision) or from the header itself when it carries them
    inline; a placeholder with nothing to fill it raises :class:`InputError`.
    Other header config (``reasoningEffort``, ``maxTokens``) is left in
    ``RequestHeader.config``: which wire keys it becomes is the dialect's
    business, so ``params`` stays empty.
    """
    s = session.step(turn, step)
    h = s.header
    if h is None:
        raise InputError(f"turn {turn} step {step} has no request/header before it", path=session.path)
    if system is None:
        system = h.system if h.system is not None else (sidecars.system(h.revision) if sidecars else None)
        if system is None:
            raise InputError(f"request/header carries {SYSTEM_PLACEHOLDER}; pass system= or sidecars=",
                             path=session.path, line=h.line)
    if tools is None:
        tools = h.tools if h.tools is not None else (sidecars.tools(h.revision) if sidecars else None)
        if tools is None:
            raise InputError(f"request/header carries {TOOLS_PLACEHOLDER}; pass tools= or sidecars=",
                             path=session.path, line=h.line)
    return Request(
        route=Route(provider=_family(h.provider), model=h.model),
        system=(SystemBlock(system),) if system else (),
        tools=header_tools(tools),
        messages=step_messages(session, turn, step),
    )


# --------------------------------------------------------------------------- folders


def find_sessions(root: str | Path) -> list[SessionGroup]:
    """Every folder under ``root`` (``root`` included) holding ``session*.jsonl``,
    as a parent with its children, in path order."""
    base = Path(root)
    if not base.exists():
        raise InputError("no such directory", path=base)
    folders = sorted({p.parent for p in base.rglob("session*.jsonl")} | (
        {base} if base.is_dir() and any(base.glob("session*.jsonl")) else set()))
    groups = []
    for folder in folders:
        parent_path = folder / "session.jsonl"
        children = []
        for p in folder.iterdir():
            m = _CHILD_RE.match(p.name)
            if m:
                children.append((int(m.group(1)), p))
        if not parent_path.exists() and not children:
            continue
        groups.append(SessionGroup(
            directory=folder,
            parent=read_session(parent_path) if parent_path.exists() else None,
            children=tuple(read_session(p) for _, p in sorted(children)),
        ))
    return groups


# --------------------------------------------------------------------------- sidecars


@dataclass(frozen=True)
class Sidecars:
    """System prompt text and tool schemas for a session whose headers carry
    placeholders. ``system(r)`` / ``tools(r)`` give header revision ``r``:
    the sidecar's ``initial`` for 0, ``changes[r-1]`` after it; a revision
    the sidecar does not pin (a non-pinning scenario's ``resume`` header)
    falls back to ``initial``. ``None`` where no sidecar applies."""

    system_initial: str | None = None
    system_changes: tuple[str, ...] = ()
    system_path: Path | None = None
    tools_initial: tuple[FrozenDict, ...] | None = None
    tools_changes: tuple[tuple[FrozenDict, ...], ...] = ()
    tools_path: Path | None = None

    def system(self, revision: int = 0) -> str | None:
        if 0 < revision <= len(self.system_changes):
            return self.system_changes[revision - 1]
        return self.system_initial

    def tools(self, revision: int = 0) -> tuple[FrozenDict, ...] | None:
        if 0 < revision <= len(self.tools_changes):
            return self.tools_changes[revision - 1]
        return self.tools_initial


def _js_trim_end(text: str) -> str:
    return text.rstrip(_JS_WHITESPACE)


def read_system_sidecar(path: Path) -> tuple[str, tuple[str, ...]]:
    """A ``system-prompt*.expected.md`` -> (initial, changes), each hydrated
    the way DSH replay does (``trimEnd``)."""
    raw = read_bytes(path)
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise InputError(f"not UTF-8: {exc.reason}", path=path) from None
    parts = _PROMPT_CHANGE_RE.split(text)
    return _js_trim_end(parts[0]), tuple(_js_trim_end(p) for p in parts[1:])


def read_tools_sidecar(path: Path) -> tuple[tuple[FrozenDict, ...], tuple[tuple[FrozenDict, ...], ...]]:
    """A ``tool-schemas*.expected.json`` ``{"initial": [...], "changes": [[...], ...]}``."""
    value = freeze(load(path))
    if not isinstance(value, dict):
        raise InputError("tool-schema sidecar must be an object", path=path)
    initial, changes = value.get("initial"), value.get("changes")
    if not isinstance(initial, tuple) or not isinstance(changes, tuple) or not all(
            isinstance(c, tuple) for c in changes):
        raise InputError("tool-schema sidecar needs list-valued initial and changes (a list of lists)", path=path)
    for i, schemas in enumerate((initial,) + changes):
        for j, schema in enumerate(schemas):
            if not isinstance(schema, dict) or not isinstance(schema.get("name"), str):
                where = f"/initial/{j}" if i == 0 else f"/changes/{i - 1}/{j}"
                raise InputError("tool schema needs a string name", path=path, pointer=where)
    return initial, changes


def _load_classes(header_classes: Any) -> dict[str, FrozenDict]:
    if header_classes is None:
        return {}
    if isinstance(header_classes, (str, Path)):
        path = Path(header_classes)
        value = freeze(load(path))
    else:
        path, value = None, freeze(header_classes)
    rows = value.get("scenarios") if isinstance(value, dict) else value
    if not isinstance(rows, tuple) or not all(isinstance(r, dict) and isinstance(r.get("name"), str) for r in rows):
        raise InputError("header classes need a list of scenarios with names", path=path)
    return {r["name"]: r for r in rows}


def _find_classes(scenario_dir: Path) -> Path | None:
    """``examples/acp-agent/header-classes.json`` above ``tests/snapshots/<name>``."""
    for parent in list(scenario_dir.parents)[:4]:
        candidate = parent / "header-classes.json"
        if candidate.is_file():
            return candidate
    return None


def sidecars(scenario_dir: str | Path, header_classes: Any = "auto", *, child: int | None = None) -> Sidecars:
    """Resolve the system prompt and tool schemas for a scenario's session.

    Rules (``../shared/real/README.md``): a child ``n`` uses its own
    ``system-prompt.<n>.expected.md`` / ``tool-schemas.<n>.expected.json``
    where present. Otherwise, when ``header_classes`` lists the scenario, its
    ``classPin`` scenario pins the header; that pin's ``systemPromptSource``
    / ``toolSchemasSource`` (when set) names the scenario whose sidecar is
    shared. Scenarios absent from the table (apps/web, headless-agent) use
    their own sidecars where they have any. ``header_classes`` is a path, the
    loaded JSON, ``None`` (no table), or ``"auto"`` (look for
    ``header-classes.json`` up to four folders above).
    """
    folder = Path(scenario_dir)
    if header_classes == "auto":
        header_classes = _find_classes(folder)
    classes = _load_classes(header_classes)
    sys_path = tools_path = None
    if child:
        own_sys = folder / f"system-prompt.{child}.expected.md"
        own_tools = folder / f"tool-schemas.{child}.expected.json"
        sys_path = own_sys if own_sys.is_file() else None
        tools_path = own_tools if own_tools.is_file() else None
    entry = classes.get(folder.name)
    if entry is not None:
        pin_name = entry.get("classPin") or folder.name
        pin = classes.get(pin_name, entry)
        sys_src = pin.get("systemPromptSource") or pin_name
        tools_src = pin.get("toolSchemasSource") or pin_name
        if sys_path is None:
            candidate = folder.parent / sys_src / "system-prompt.expected.md"
            sys_path = candidate if candidate.is_file() else None
        if tools_path is None:
            candidate = folder.parent / tools_src / "tool-schemas.expected.json"
            tools_path = candidate if candidate.is_file() else None
    else:
        if sys_path is None and (folder / "system-prompt.expected.md").is_file():
            sys_path = folder / "system-prompt.expected.md"
        if tools_path is None and (folder / "tool-schemas.expected.json").is_file():
            tools_path = folder / "tool-schemas.expected.json"
    result: dict[str, Any] = {}
    if sys_path is not None:
        initial, changes = read_system_sidecar(sys_path)
        result.update(system_initial=initial, system_changes=changes, system_path=sys_path)
    if tools_path is not None:
        t_initial, t_changes = read_tools_sidecar(tools_path)
        result.update(tools_initial=t_initial, tools_changes=t_changes, tools_path=tools_path)
    return Sidecars(**result)
