"""Readers: turn recorded harness histories into canonical ``fidelity.model`` values.

:mod:`.dsh` (DeepSeek Harness session logs and the request at each step),
:mod:`.gemini_history` (Qwen Code's Gemini ``Content[]``),
:mod:`.openai_messages` / :mod:`.anthropic_messages` (plain ``messages``
lists). Readers do the file I/O; what they return is frozen; bad input raises
:class:`fidelity.errors.InputError` naming the file and line or JSON pointer."""

from .anthropic_messages import from_anthropic_messages, read_anthropic_messages, to_anthropic_messages
from .dsh import (
    Event,
    RequestHeader,
    Session,
    SessionGroup,
    Sidecars,
    Step,
    Turn,
    Usage,
    find_sessions,
    read_session,
    sidecars,
    step_messages,
    step_reply,
    step_request,
)
from .gemini_history import from_gemini_contents, read_gemini_history, to_gemini_contents
from .openai_messages import from_openai_messages, read_openai_messages, to_openai_messages

__all__ = [
    "Event",
    "RequestHeader",
    "Session",
    "SessionGroup",
    "Sidecars",
    "Step",
    "Turn",
    "Usage",
    "find_sessions",
    "read_session",
    "sidecars",
    "step_messages",
    "step_reply",
    "step_request",
    "from_gemini_contents",
    "read_gemini_history",
    "to_gemini_contents",
    "from_openai_messages",
    "read_openai_messages",
    "to_openai_messages",
    "from_anthropic_messages",
    "read_anthropic_messages",
    "to_anthropic_messages",
]
