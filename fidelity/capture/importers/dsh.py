"""DeepSeek Harness session logs: one snapshot per model request, rebuilt
(:func:`fidelity.sources.dsh.step_request`) and rendered by the ``deepseek``
dialect (``body_exact: false``); a fork's first own request names the
parent's last request before the seed ends as its ``parent``."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from ...errors import FidelityError, InputError
from ._base import Imported

__all__ = ["read_dsh", "DEEPSEEK_URL"]

#: DeepSeek's OpenAI-compatible endpoint (https://api-docs.deepseek.com/)
DEEPSEEK_URL = "https://api.deepseek.com/chat/completions"
_NOTE = "rebuilt from a DeepSeek Harness session log and rendered by fidelity's deepseek dialect, not captured bytes"


def read_dsh(path: str | Path) -> Imported:
    """Every step of a session (and of its siblings: the parent
    ``session.jsonl`` and children ``session.<n>.jsonl`` in its folder)."""
    from ... import wire
    from ...sources import dsh

    p = Path(path)
    folder = p if p.is_dir() else p.parent
    try:
        dialect = wire.get("deepseek")
    except FidelityError as exc:
        raise InputError(f"the deepseek wire dialect is not available: {exc}", path=p) from None
    groups = [g for g in dsh.find_sessions(folder) if g.directory == folder]
    if not groups:
        raise InputError("no DeepSeek Harness session*.jsonl here", path=p)
    group = groups[0]
    out = Imported(source=f"dsh:{folder.name}")
    step_names: dict[tuple[str, int], str] = {}  # (session id, request_index) -> name
    for session in group.sessions():
        sc = dsh.sidecars(folder, child=session.index or None)
        first = True
        seeded = len(session.seed_events()) if session.is_child else 0
        for step in session.steps():
            if step.request_index < seeded:
                continue  # a request copied from the parent with the seed
            where = f"{session.path.name}:turn {step.turn} step {step.step}"
            try:
                request = dsh.step_request(session, step.turn, step.step, sidecars=sc)
                body = dialect.render(request)
            except FidelityError as exc:
                out.warnings.append(f"{where}: skipped ({exc})")
                out.skipped += 1
                continue
            kwargs: dict[str, Any] = {}
            if first:
                kwargs = {"has_parent": True, "parent": _fork_parent(session, group, step_names)}
            snap = out.add(
                method="POST",
                url=DEEPSEEK_URL,
                headers=[("content-type", "application/json")],
                body=body,
                where=where,
                notes=[_NOTE],
                body_exact=False,
                **kwargs,
            )
            first = False
            if snap is None:  # a fixed URL and header: never set apart
                continue
            step_names[(session.id, step.request_index)] = snap.filename
    out.warnings.append(_NOTE)
    return out


def _fork_parent(session: Any, group: Any, step_names: dict[tuple[str, int], str]) -> str | None:
    """The snapshot a child's first request forked from, or ``None``."""
    seed = session.seed_length
    parent = group.parent
    if not session.is_child or seed is None or parent is None or parent.id != session.parent_id:
        return None
    best = None
    for step in parent.steps():
        if step.request_index < len(parent.events) and parent.events[step.request_index].seq < seed:
            name = step_names.get((parent.id, step.request_index))
            if name is not None:
                best = name
    return best
