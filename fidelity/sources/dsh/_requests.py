"""The canonical request the harness sent at a step (:mod:`fidelity.sources.dsh`)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ... import providers
from ...errors import InputError, UnknownName
from ...model import Request, Route, SystemBlock, Tool, freeze
from ._messages import step_messages
from ._sidecars import Sidecars
from ._values import SYSTEM_PLACEHOLDER, TOOLS_PLACEHOLDER, Session

__all__ = ["step_request"]


def _family(provider: str) -> str:
    """DSH provider ids (``deepseek-official``, ``deepseek``) -> cache/price family."""
    try:
        return providers.family(provider)
    except UnknownName:
        return provider


def _tool(value: Any) -> Tool:
    """A DSH tool schema ``{name, description, parameters}`` as a :class:`Tool`, key order kept."""
    if isinstance(value, Tool):
        return value
    if not isinstance(value, dict) or not isinstance(value.get("name"), str):
        raise InputError("a tool schema must be an object with a string name")
    extra = {k: v for k, v in value.items() if k not in ("name", "description", "parameters")}
    return Tool(
        name=value["name"],
        description=value.get("description"),
        parameters=value.get("parameters"),
        extra=freeze(extra),
    )


def step_request(
    session: Session,
    turn: int,
    step: int,
    system: str | None = None,
    tools: Sequence[Any] | None = None,
    *,
    sidecars: Sidecars | None = None,
) -> Request:
    """The canonical request the harness sent at ``(turn, step)``.

    Routed from the step's ``request/header``; ``system`` and ``tools`` come from
    the header or, for placeholders, ``sidecars`` (``InputError`` when none fills
    them). Other header config stays in ``RequestHeader.config``; ``params`` is empty."""
    s = session.step(turn, step)
    h = s.header
    if h is None:
        raise InputError(f"turn {turn} step {step} has no request/header before it", path=session.path)
    if system is None:
        system = h.system if h.system is not None else (sidecars.system(h.revision) if sidecars else None)
    if tools is None:
        tools = h.tools if h.tools is not None else (sidecars.tools(h.revision) if sidecars else None)
    for value, name, placeholder in ((system, "system", SYSTEM_PLACEHOLDER), (tools, "tools", TOOLS_PLACEHOLDER)):
        if value is None:
            raise InputError(f"request/header carries {placeholder}; pass {name}= or sidecars=", path=session.path,
                             line=h.line)
    assert tools is not None  # checked above
    return Request(
        route=Route(provider=_family(h.provider), model=h.model),
        system=(SystemBlock(system),) if system else (),
        tools=tuple(_tool(s) for s in tools),
        messages=step_messages(session, turn, step),
    )
