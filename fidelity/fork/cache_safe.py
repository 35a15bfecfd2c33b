"""CacheSafeParams (Qwen Code): a snapshot of the parent's cache-critical
request head, and the fallback that loses it.

Source: seed 000 section 2 and "Graceful Degradation"; Qwen Code
``packages/core/src/followup/forkedQuery.ts`` (``saveCacheSafeParams``,
``createForkedChat``, ``maxHistoryEntries = 40``). Rules: docs/fork.md."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace

import orjson

from ..errors import ForkUnavailable
from ..model import EMPTY, FrozenDict, Message, Request, Route, SystemBlock, Text, Tool
from . import gemini_placeholder

__all__ = [
    "HISTORY_WINDOW",
    "DEFAULT_FORK_SYSTEM_PROMPT",
    "CacheSafeParams",
    "CacheSafeStore",
    "fork_request",
    "query_request",
]

HISTORY_WINDOW = 40  # Qwen Code createForkedChat: maxHistoryEntries = 40

DEFAULT_FORK_SYSTEM_PROMPT = (
    "You are a forked worker. The conversation shows your directive; carry it out "
    "with the tools you have and report once at the end. Do not start subagents."
)
"""fidelity's own wording, in the place of Qwen Code's ``FORK_AGENT.systemPrompt``."""


def _head_bytes(system: tuple[SystemBlock, ...], tools: tuple[Tool, ...]) -> tuple[bytes, bytes]:
    return orjson.dumps(system), orjson.dumps(tools)


@dataclass(frozen=True)
class CacheSafeParams:
    """One snapshot: route (model), system, tools, generation parameters,
    the last ``window`` history entries, and the head ``version``."""

    route: Route
    system: tuple[SystemBlock, ...]
    tools: tuple[Tool, ...]
    params: FrozenDict
    history: tuple[Message, ...]
    version: int


@dataclass(frozen=True)
class CacheSafeStore:
    """Immutable holder of the current snapshot (Qwen Code keeps one module
    global; here each :meth:`update` returns a new store; example: docs/fork.md)."""

    snapshot: CacheSafeParams | None = None
    window: int = HISTORY_WINDOW

    def update(self, request: Request) -> CacheSafeStore:
        """Snapshot ``request`` after a completed parent turn; the version goes up
        only when the serialised system or tools change (``saveCacheSafeParams``
        compares only ``systemInstruction`` and ``tools``)."""
        previous = self.snapshot
        version = previous.version if previous else 0
        if previous is None or _head_bytes(previous.system, previous.tools) != _head_bytes(request.system, request.tools):
            version += 1
        history = request.messages[-self.window :] if self.window > 0 else ()
        snapshot = CacheSafeParams(request.route, request.system, request.tools, request.params, history, version)
        return replace(self, snapshot=snapshot)

    def clear(self) -> CacheSafeStore:
        """A store without snapshot (Qwen Code ``clearCacheSafeParams``)."""
        return replace(self, snapshot=None)


def fork_request(
    snapshot: CacheSafeParams | CacheSafeStore | None,
    parent: Request,
    directive: str,
    *,
    fallback_system: str = DEFAULT_FORK_SYSTEM_PROMPT,
    fallback_tools: Sequence[Tool] | None = None,
    **options: str,
) -> Request:
    """The fork child's first request: head from the snapshot (without one:
    ``fallback_system``, ``fallback_tools`` or the parent's), messages by
    :func:`fidelity.fork.gemini_placeholder.plan` on the parent's history."""
    if isinstance(snapshot, CacheSafeStore):
        snapshot = snapshot.snapshot
    messages = gemini_placeholder.plan(parent.messages, directive, **options).messages()
    if snapshot is None:
        tools = parent.tools if fallback_tools is None else tuple(fallback_tools)
        return replace(parent, system=(SystemBlock(fallback_system),), tools=tools, messages=messages)
    return Request(snapshot.route, snapshot.system, snapshot.tools, messages, snapshot.params)


def query_request(snapshot: CacheSafeParams | CacheSafeStore, user_message: str) -> Request:
    """A forked query (Qwen Code ``runForkedQuery``): the snapshot's head and
    windowed history, then ``user_message``."""
    if isinstance(snapshot, CacheSafeStore):
        if snapshot.snapshot is None:
            raise ForkUnavailable("fork unavailable: no CacheSafeParams snapshot yet (no completed parent turn)")
        snapshot = snapshot.snapshot
    messages = snapshot.history + (Message("user", (Text(user_message),)),)
    return Request(snapshot.route, snapshot.system, snapshot.tools, messages, snapshot.params or EMPTY)
