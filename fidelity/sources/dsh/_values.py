"""The values a DeepSeek Harness log is read into, and its format constants (:mod:`fidelity.sources.dsh`)."""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ...errors import InputError
from ...model import EMPTY, FrozenDict, Message

__all__ = [
    "PACKED_ROWS",
    "SYSTEM_PLACEHOLDER",
    "TOOLS_PLACEHOLDER",
    "Event",
    "Usage",
    "RequestHeader",
    "Step",
    "Turn",
    "Session",
    "SessionGroup",
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


@dataclass(frozen=True)
class Event:
    """One log line after the header: ``seq`` its sequence number, ``span`` how
    many it occupies (packed chunk rows), ``record`` the whole line, frozen."""

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
    """Token usage DSH recorded for one model request: ``input_tokens`` not
    served from DeepSeek's cache, ``cache_read_tokens`` served; their sum is the prompt."""

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
    """A ``request/header`` event: route and fixed head; ``system`` / ``tools``
    are ``None`` for placeholders (the text is in sidecars); ``revision`` counts
    the pinning headers before it (revision *r* owns a sidecar's ``changes[r-1]``)."""

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
    """One model request inside a turn; the surface built from the events before
    ``request_index`` (its ``assistant/message``, else ``step/end``, else the
    log's end) is what the model saw."""

    turn: int
    step: int
    end_line: int | None
    header: RequestHeader | None
    usage: Usage | None
    finish: FrozenDict | None
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


@dataclass(frozen=True)
class Session:
    """A parsed session log. Build with :func:`read_session`."""

    path: Path
    header: FrozenDict
    events: tuple[Event, ...]
    turns: tuple[Turn, ...]
    #: child number from the file name ``session.<n>.jsonl``; 0 for ``session.jsonl``
    index: int = 0
    _messages: tuple[tuple[int, Message], ...] = field(default=(), repr=False, compare=False)

    @property
    def id(self) -> str:
        sid: str = self.header["id"]  # a string: checked when the log is read
        return sid

    def surface_messages(self) -> tuple[tuple[int, Message], ...]:
        """``(event index, message)`` of every surface message in log order."""
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
