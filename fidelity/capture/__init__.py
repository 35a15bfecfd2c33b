"""The capture edge: request snapshots, SDK transports, redaction, importers.

Everything that turns traffic into snapshot files lives here; it is the one
place (besides the CLI and report writers) that writes to disk.

- :mod:`fidelity.capture.snapshot`: the snapshot file format (metadata line
  plus exact body bytes), folders of snapshots and their pairing.
- :mod:`fidelity.capture.transport`: httpx/httpx2 transports that record what
  an SDK client sends (:func:`record`).
- :mod:`fidelity.capture.redact`: secrets removed before anything is written.
- :mod:`fidelity.capture.importers`: HAR, vcrpy cassettes, JSONL logs and
  DeepSeek Harness sessions turned into snapshots.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .transport import AsyncRecordingTransport, Recorder, RecordingTransport, httpx_client_of, record

__all__ = [
    "AsyncRecordingTransport",
    "Recorder",
    "RecordingTransport",
    "httpx_client_of",
    "record",
]


def __getattr__(name: str) -> Any:
    """Re-export the transport names on first use: importing httpx costs more
    than reading a snapshot, which is all ``fidelity diff`` needs here."""
    if name in __all__:
        from . import transport

        return getattr(transport, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
