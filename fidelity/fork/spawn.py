"""Spawn: a child with no inherited history, the control.

The parent's request head, an empty history and the task as the first user
message; seed 002 (DSH fork provider README): fork "shares all run mechanics
with spawn; the session seed is the only behavioral difference"."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

from ..model import Message, Request, SystemBlock, Text, Tool

__all__ = ["fork_request"]


def fork_request(
    parent: Request,
    directive: str,
    *,
    system: Sequence[SystemBlock] | None = None,
    tools: Sequence[Tool] | None = None,
) -> Request:
    """The spawned child's first request: the parent's route and parameters,
    its system and tools unless ``system`` / ``tools`` replace them, and one
    user message holding the directive verbatim."""
    return replace(
        parent,
        system=tuple(parent.system if system is None else system),
        tools=tuple(parent.tools if tools is None else tools),
        messages=(Message("user", (Text(directive),)),),
    )
