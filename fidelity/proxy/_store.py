"""The one place the proxy and the scripted upstream import snapshot and
redaction code from, and the writer of the proxy's snapshot files: the
snapshot header (:meth:`Snapshot.metadata`) plus a ``response`` member
(status, stream, reported usage), checked for known secrets, written atomically."""

from __future__ import annotations

import os
import tempfile
from pathlib import Path
from typing import Any

import orjson

try:  # after the reorganisation
    from ..capture import redact as redact
    from ..capture import snapshot as snapshot
except ImportError:  # before it
    from .. import redact as redact  # type: ignore[no-redef]
    from .. import snapshot as snapshot  # type: ignore[no-redef]

from ..errors import FidelityError
from ..jsonio import atomic_write

__all__ = ["snapshot", "redact", "Snapshot", "Redactor", "from_request", "write_snapshot", "file_bytes",
           "check_writable"]

Snapshot = snapshot.Snapshot
Redactor = redact.Redactor
from_request = snapshot.from_request


def file_bytes(snap: snapshot.Snapshot, response: dict[str, Any] | None = None) -> bytes:
    """A snapshot file's bytes: the header line (the documented members,
    then ``response`` when given) and the body, byte for byte."""
    meta = snap.metadata()
    if response is not None:
        meta["response"] = response
    return orjson.dumps(meta) + b"\n" + snap.body


def write_snapshot(folder: Path, snap: snapshot.Snapshot, redactor: redact.Redactor, response: dict[str, Any] | None = None) -> Path:
    """Write ``snap`` (already redacted) atomically as ``folder/<filename>``,
    refusing bytes that still hold a secret the redactor knows."""
    data = redact.ensure_clean(file_bytes(snap, response), redactor, what=f"snapshot {snap.filename}")
    path = folder / snap.filename
    atomic_write(path, data)
    return path


def check_writable(folder: Path, what: str) -> None:
    """Create ``folder`` if needed and write (then remove) a probe file in it, so a
    folder the server cannot write into fails at start with one line naming
    ``what`` (a real write: it meets what the server's writes will)."""
    try:
        folder.mkdir(parents=True, exist_ok=True)
        fd, probe = tempfile.mkstemp(prefix=".fidelity-probe-", dir=folder)
        os.close(fd)
        os.unlink(probe)
    except OSError as exc:
        raise FidelityError(f"{folder}: cannot write {what} there ({exc.strerror or exc})") from None
