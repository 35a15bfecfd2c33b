"""What every importer returns, and writing it out."""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from ...errors import InputError
from ...jsonio import atomic_write
from ..redact import Redactor, ensure_clean, url_problem
from ..snapshot import Snapshot, SnapshotWriter, dumps, from_request, utf8_text

__all__ = ["Imported", "write_imported", "unwritable"]


@dataclass
class Imported:
    """Snapshots read from one recording, in request order, and warnings
    about what the recording could not keep (shown to the user)."""

    source: str
    snapshots: list[Snapshot] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    skipped: int = 0
    redactor: Redactor = field(default_factory=Redactor)
    #: why entries were skipped: reason -> count (:mod:`fidelity.capture.classify`)
    reasons: Counter[str] = field(default_factory=Counter)
    #: requests imported or not that the one rule leaves out of every command's
    #: figures, other than calls that are not model requests: reason -> count
    #: (:func:`fidelity.traffic.apart.decide`; recordings the one reader reads)
    set_apart: Counter[str] = field(default_factory=Counter)

    def __post_init__(self) -> None:
        # the source names the file, whose name may hold bytes that are not
        # UTF-8 (Python keeps them as lone surrogates): every snapshot repeats it
        self.source = utf8_text(self.source)

    def skip(self, reason: str) -> None:
        """Count one entry that is not a model request, with its reason."""
        self.skipped += 1
        self.reasons[reason] += 1

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
        time: Any = None,
        usage: dict[str, Any] | None = None,
    ) -> Snapshot | None:
        """Redact and append one request (``where`` locates it in the source),
        with its ``time`` and the ``usage`` reported; ``None`` when it is set
        apart as :func:`unwritable`."""
        why = unwritable(method, url, headers)
        if why is not None:
            self.skip(why)
            self.warnings.append(f"{where}: set apart: {why}")
            return None
        kwargs: dict[str, Any] = {"time": time, "usage": None}
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
        if usage is not None:
            snap = replace(snap, usage=usage)
        self.snapshots.append(snap)
        return snap

    def summary(self) -> str:
        """One line: how many requests, how many inexact, how many skipped."""
        inexact = sum(1 for s in self.snapshots if not s.body_exact)
        text = f"{self.source}: {len(self.snapshots)} request(s)"
        if inexact:
            text += f", {inexact} without exact body bytes"
        if self.skipped:
            text += f", {self.skipped} entr{'y' if self.skipped == 1 else 'ies'} skipped"
            unexplained = self.skipped - sum(self.reasons.values())
            counts = sorted(self.reasons.items(), key=lambda kv: (-kv[1], kv[0]))
            if unexplained > 0:
                counts.append(("not model requests", unexplained))
            text += " (" + "; ".join(f"{reason}: {n}" for reason, n in counts) + ")"
        return text


def unwritable(method: str, url: str, headers: Iterable[tuple[str, str]] | Mapping[str, str]) -> str | None:
    """Why a request with this method, URL and headers cannot become a
    snapshot (which is UTF-8 JSON, its URL redacted), or ``None``."""
    problem = url_problem(url)
    if problem is not None:
        return f"malformed URL: {problem}"
    pairs = headers.items() if isinstance(headers, Mapping) else headers
    for text in (method, *(x for pair in pairs for x in pair)):
        try:
            str(text).encode("utf-8")
        except UnicodeEncodeError:
            return "the method or a header holds a lone surrogate, which is not UTF-8"
    return None


def write_imported(imported: Imported, folder: str | Path) -> list[Path]:
    """Write the snapshots into ``folder`` (numbering on after what is there),
    all or nothing: every file is checked for known secrets before the first
    is written, and a failed write removes those this call wrote."""
    writer = SnapshotWriter(folder)
    planned: list[tuple[Path, bytes]] = []
    renames: dict[str, str] = {}
    for original in imported.snapshots:
        snap = replace(original, seq=writer.next_seq())
        if isinstance(snap.parent, str) and snap.parent in renames:
            snap = replace(snap, parent=renames[snap.parent])
        renames[original.filename] = snap.filename
        data = ensure_clean(dumps(snap), imported.redactor, what=f"snapshot {snap.filename}")
        planned.append((Path(folder) / snap.filename, data))
    paths: list[Path] = []
    try:
        for path, data in planned:
            if path.exists():
                raise InputError("a snapshot of this name already exists; refusing to overwrite", path=path)
            atomic_write(path, data)
            paths.append(path)
    except BaseException:
        for path in paths:
            try:
                path.unlink()
            except OSError:
                pass
        raise
    return paths
