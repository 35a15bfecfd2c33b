"""JSON-lines request logs for ``fidelity import``: every line read by the one
reader (:mod:`fidelity.traffic.sources`: claude-trace lines, and request-log
lines through :func:`fidelity.traffic.requestlog.parse`), each exchange made a
snapshot by :mod:`.recorded`; a line's ``parent`` (an earlier line's number)
becomes the snapshot's parent. The rules: docs/ci-and-capture.md."""

from __future__ import annotations

from pathlib import Path

from ...errors import InputError
from ...traffic.files import read_source
from ...traffic.sources import Source, entries
from ._base import Imported
from .recorded import NOT_GENERATION, add

__all__ = ["read_jsonl"]


def read_jsonl(path: str | Path) -> Imported:
    """Every request line of a JSONL log, in line order."""
    if not read_source(path).strip():
        raise InputError("empty file, expected JSON lines", path=path)
    out = Imported(source=f"jsonl:{Path(path).name}")
    names_by_line: dict[int, str] = {}
    set_apart: set[int] = set()
    for ex in entries(Source("jsonl", Path(path))):
        number = ex.index + 1
        parent: tuple[str | None, ...] = ()
        notes: list[str] = []
        if ex.parent:
            (named,) = ex.parent
            if named is not None and named not in names_by_line and named not in set_apart:
                raise InputError(f"parent {named!r} is not an earlier request line", path=path, line=number)
            if named in set_apart:
                notes.append(f"its parent, line {named}, was set apart: the snapshot names no parent")
            parent = (names_by_line.get(named) if named is not None else None,)
        name = add(out, ex, "jsonl", parent=parent, notes=notes)
        if name is not None:
            names_by_line[number] = name
        elif ex.body and not (ex.skip or "").startswith(NOT_GENERATION):
            set_apart.add(number)
    if any(not s.body_exact for s in out.snapshots):
        out.warnings.append("some bodies were logged as JSON objects; their bytes are the logger's serialisation")
    return out
