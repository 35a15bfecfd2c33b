"""DeepSeek Harness (DSH) session event logs: read them, and rebuild the
request the harness sent at any step.

A log is JSONL: a session header, then one event per line; a child session
sits beside its parent as ``session.<n>.jsonl``. What reaches the model is
the surface (message events carrying ``surfaceOp``). The format, the
surface rules and sequence numbers: docs/sources.md. Sources:
``../shared/real/README.md``; the recorded logs of
deepseek-ai/deepseek-harness @ b150a551b8 (MIT) and its ``acp-snapshot``
helpers (``parseSystemPromptSnapshot``, ``parseToolSchemasSnapshot``,
``pinningHeaderPayloads``), which define the sidecar formats."""

from __future__ import annotations

from ._folders import find_sessions
from ._messages import step_messages, step_reply
from ._read import read_session
from ._requests import step_request
from ._sidecars import Sidecars, sidecars
from ._values import Event, RequestHeader, Session, SessionGroup, Step, Turn, Usage

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
]
