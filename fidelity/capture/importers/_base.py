"""What every importer returns, and writing it out."""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Iterable, Mapping

import json

from ...jsonio import atomic_write
from ..redact import Redactor, ensure_clean
from ..snapshot import Snapshot, SnapshotWriter, dumps, from_request

__all__ = ["Imported", "write_imported", "looks_like_model_request"]


@dataclass
class Imported:
    """Snapshots read from one recording, in request order, and warnings
    about what the recording could not keep (shown to the user)."""

    source: str
    snapshots: list[Snapshot] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    skipped: int = 0
    redactor: Redactor = field(default_factory=Redactor)

    def add(
        self,
        *,
        method: str,
        url: str,
        headers: Iterable[tuple[str, str]] | Mapping[str, str],
        body: bytes,
        where: str,
        notes: Iterable[str] = (),
        body_exact: bool = True,
        parent: Any = None,
        has_parent: bool = False,
    ) -> Snapshot:
        """Redact and append one request; ``where`` locates it in the source."""
        kwargs: dict[str, Any] = {}
        if has_parent:
            kwargs["parent"] = parent
        snap = from_request(
            method=method,
            url=url,
            headers=headers,
            body=body,
            source=f"{self.source}#{where}",
            notes=notes,
            body_exact=body_exact,
            redactor=self.redactor,
            seq=len(self.snapshots) + 1,
            **kwargs,
        )
        self.snapshots.append(snap)
        return snap

    def summary(self) -> str:
        """One line: how many requests, how many inexact, how many skipped."""
        inexact = sum(1 for s in self.snapshots if not s.body_exact)
        text = f"{self.source}: {len(self.snapshots)} request(s)"
        if inexact:
            text += f", {inexact} without exact body bytes"
        if self.skipped:
            text += f", {self.skipped} entr{'y' if self.skipped == 1 else 'ies'} skipped (not model requests)"
        return text


def write_imported(imported: Imported, folder: str | Path) -> list[Path]:
    """Write the snapshots into ``folder`` (numbering continues after what is
    there). Each file is checked for known secrets before it is written."""
    writer = SnapshotWriter(folder)
    paths = []
    renames: dict[str, str] = {}
    for snap in imported.snapshots:
        snap = replace(snap, seq=writer.next_seq())
        if isinstance(snap.parent, str) and snap.parent in renames:
            snap = replace(snap, parent=renames[snap.parent])
        renames[imported.snapshots[len(paths)].filename] = snap.filename
        data = ensure_clean(dumps(snap), imported.redactor, what=f"snapshot {snap.filename}")
        path = Path(folder) / snap.filename
        atomic_write(path, data)
        paths.append(path)
    return paths


_HINTS = (b'"messages"', b'"contents"', b'"input"', b'"prompt"', b'"system"')


def looks_like_model_request(body: bytes) -> bool:
    """A JSON object body with a model request's members (``model`` plus
    ``messages`` / ``contents`` / ``input`` ...): cheap, before parsing."""
    head = body.lstrip()[:1]
    if head != b"{":
        return False
    if not any(h in body for h in _HINTS):
        return False
    try:  # lenient on purpose: keep the bytes of any JSON request; `fidelity diff` judges them
        obj = json.loads(body.decode("utf-8", "surrogatepass"))
    except (ValueError, RecursionError):
        return False
    return isinstance(obj, dict) and any(k in obj for k in ("messages", "contents", "input", "prompt"))
