"""Reading one session log: header, events, turns, steps, usage, request headers (:mod:`fidelity.sources.dsh`)."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from ...errors import InputError
from ...jsonio import loads, read_bytes
from ...model import EMPTY, FrozenDict, freeze
from ._checks import _fail, _int, _obj
from ._messages import _surface_messages, _surface_until
from ._values import (
    _CHILD_RE,
    PACKED_ROWS,
    SYSTEM_PLACEHOLDER,
    TOOLS_PLACEHOLDER,
    Event,
    RequestHeader,
    Session,
    Step,
    Turn,
    Usage,
)

__all__ = ["read_session"]


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
    for key, name in (
        ("inputTokens", "input_tokens"),
        ("cacheReadTokens", "cache_read_tokens"),
        ("outputTokens", "output_tokens"),
        ("reasoningTokens", "reasoning_tokens"),
    ):
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
        line=event.line,
        provider=provider,
        model=model,
        reason=reason if isinstance(reason, str) else None,
        config=config,
        system=system,
        tools=tools,
        message_prefix=head.get("messagePrefix"),
        revision=revision,
        record=event.record,
    )


def read_session(path: str | Path) -> Session:
    """Read one DSH session log; :class:`InputError` names the file and line of
    anything malformed (a turn with no ``turn/end`` is fine: it is in flight)."""
    p = Path(path)
    rows = _lines(p)
    first_line, header = rows[0]
    if not isinstance(header, FrozenDict) or header.get("type") != "session":  # freeze made every dict one
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
    session = Session(
        path=p, header=header, events=tuple(events), turns=turns, index=int(m.group(1)) if m else 0, _messages=messages
    )
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
        if open_step["request_index"] is None:  # no assistant/message: cut at the step's end
            open_step["request_index"] = end_index
        open_turn["steps"].append(Step(end_line=end_line, **open_step))
        open_step = None

    def close_turn(end_line: int | None, reason: Any, end_index: int) -> None:
        nonlocal open_turn
        assert open_turn is not None
        if open_step is not None:
            close_step(None, end_index)
        turns.append(
            Turn(
                turn=open_turn["turn"],
                start_line=open_turn["line"],
                end_line=end_line,
                reason=reason,
                steps=tuple(open_turn["steps"]),
            )
        )
        open_turn = None

    for index, event in enumerate(events):
        kind, data = event.type, event.data
        if kind == "request/header":
            if data.get("reason") != "series":
                revision += 1
            header = _header(event, max(revision, 0), path)
            if open_step is not None and open_step["request_index"] is None:
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
            # the fields of the Step it becomes (end_line aside)
            open_step = {"turn": open_turn["turn"], "step": number, "header": header, "usage": None, "finish": None,
                         "request_index": None}
        elif kind == "step/end":
            number = _int(data.get("step"), "step/end data.step", path, event.line)
            if open_step is None or open_step["step"] != number:
                raise _fail(f"step/end for step {number}, which is not open", path, event.line)
            close_step(event.line, index)
        elif kind == "assistant/chunk" and open_step is not None:
            chunk = data.get("chunk")
            if isinstance(chunk, dict) and open_step["request_index"] is None:
                if chunk.get("type") == "usage":
                    open_step["usage"] = _usage(chunk.get("usage"), path, event.line)
                elif chunk.get("type") == "finish":
                    open_step["finish"] = chunk.get("reason")
        elif kind == "assistant/message" and open_step is not None:
            open_step["request_index"] = index
            if "usage" in data:
                open_step["usage"] = _usage(data.get("usage"), path, event.line)
    if open_turn is not None:
        close_turn(None, None, len(events))
    return tuple(turns)
