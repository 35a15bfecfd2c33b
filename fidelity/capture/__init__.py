"""The capture edge: request snapshots, SDK transports, redaction, importers.

The one place (besides the CLI and report writers) that writes recorded
traffic to disk: :mod:`.snapshot` (the file format, folders, pairing),
:mod:`.transport` (httpx/httpx2 recorders), :mod:`.redact` (secrets removed
before writing), :mod:`.importers` (HAR, vcrpy, JSONL, DeepSeek Harness)."""

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
