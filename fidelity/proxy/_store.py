"""The one place the proxy and the scripted upstream import snapshot and
redaction code from.

The snapshot format and redaction live in ``fidelity/snapshot.py`` and
``fidelity/redact.py`` today and move to the ``fidelity/capture/`` package
(the package reorganisation, issue 17); this module imports whichever
exists, so nothing else in :mod:`fidelity.proxy` needs to change when they
move.

It also writes the proxy's snapshot files: the documented snapshot header
(:meth:`Snapshot.metadata`) plus one member the proxy adds, ``response``
(status, whether it streamed, the usage the provider reported), checked
for known secrets before the atomic write.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import orjson

try:  # after the reorganisation
    from ..capture import redact as redact
    from ..capture import snapshot as snapshot
except ImportError:  # before it
    from .. import redact as redact  # type: ignore[no-redef]
    from .. import snapshot as snapshot  # type: ignore[no-redef]

from ..jsonio import atomic_write

__all__ = ["snapshot", "redact", "Snapshot", "Redactor", "from_request", "write_snapshot", "file_bytes"]

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
