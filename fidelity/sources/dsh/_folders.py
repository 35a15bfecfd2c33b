"""Finding sessions (a parent and its children) under a folder (:mod:`fidelity.sources.dsh`)."""

from __future__ import annotations

from pathlib import Path

from ...errors import InputError
from ._read import read_session
from ._values import _CHILD_RE, SessionGroup

__all__ = ["find_sessions"]


def find_sessions(root: str | Path) -> list[SessionGroup]:
    """Every folder under ``root`` (``root`` included) holding ``session*.jsonl``,
    as a parent with its children, in path order."""
    base = Path(root)
    if not base.exists():
        raise InputError("no such directory", path=base)
    folders = sorted(
        {p.parent for p in base.rglob("session*.jsonl")}
        | ({base} if base.is_dir() and any(base.glob("session*.jsonl")) else set())
    )
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
        groups.append(
            SessionGroup(
                directory=folder,
                parent=read_session(parent_path) if parent_path.exists() else None,
                children=tuple(read_session(p) for _, p in sorted(children)),
            )
        )
    return groups
