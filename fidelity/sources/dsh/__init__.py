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

from ._folders import find_sessions
from ._messages import step_messages, step_reply
from ._read import read_session
from ._requests import header_tools, step_request
from ._sidecars import Sidecars, sidecars
from ._values import (
    PACKED_ROWS,
    SYSTEM_PLACEHOLDER,
    TOOLS_PLACEHOLDER,
    Event,
    RequestHeader,
    Session,
    SessionGroup,
    Step,
    Turn,
    Usage,
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
