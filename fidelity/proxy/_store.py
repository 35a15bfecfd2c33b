"""The one place the proxy and the scripted upstream import snapshot and
redaction code from, and the check that a folder can be written."""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

from ..capture import redact as redact
from ..capture import snapshot as snapshot
from ..errors import FidelityError

__all__ = ["snapshot", "redact", "Snapshot", "Redactor", "from_request", "check_writable"]

Snapshot = snapshot.Snapshot
Redactor = redact.Redactor
from_request = snapshot.from_request


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
