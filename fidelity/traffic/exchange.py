"""One recorded request, as every command reads it, and request times.

An :class:`Exchange` holds what a recording says about one request (its
body bytes, URL, time, session, the usage its response reported, the HTTP
status) and what :func:`fidelity.traffic.apart.decide` made of it (the
dialect and model, and why it is skipped or set apart). Readers build it
with :func:`fidelity.traffic.apart.exchange`, so no reader decides on its own.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from datetime import UTC, datetime
from email.utils import parsedate_to_datetime
from typing import Any

__all__ = ["Exchange", "header", "iso_seconds", "http_date_seconds", "iso_text"]


@dataclass(frozen=True)
class Exchange:
    """One recorded request and the usage its response reported."""

    source: str
    index: int
    body: bytes
    url: str | None = None
    dialect: str | None = None
    model: str | None = None
    time: float | None = None
    usage: Mapping[str, Any] | None = None
    output: tuple[int, ...] = ()
    #: a request the simulator does not take (not a generation call, a
    #: failed request, an unknown provider...): why
    skip: str | None = None
    #: simulated (what it writes counts for later requests) but left out of
    #: every accuracy figure: why (:func:`fidelity.server_side.reason`)
    apart: str | None = None
    status: int | None = None
    session: str | None = None
    #: where in the source (a JSON pointer, a line)
    where: str = ""
    #: the body bytes are not the wire bytes (pydantic-ai's sorted ``parsed_body``)
    reserialised: bool = False
    #: the model the response says served the request (``None``: not said)
    response_model: str | None = None
    #: the provider whose cache the URL reaches, where the URL names one
    provider: str | None = None
    #: the request's HTTP method and headers as recorded, ``(name, value)`` in recorded order
    method: str = "POST"
    headers: tuple[tuple[str, str], ...] = ()
    #: the ``Content-Encoding`` the body was sent with and decoded from (``None``: sent as it is)
    decoded: str | None = None
    #: the body size the recording states besides the headers (HAR ``bodySize``), if any
    recorded_size: int | None = None
    #: ``(value,)`` when a request log names the request's ``parent`` line, else ``()``
    parent: tuple[Any, ...] = ()

    @property
    def path(self) -> str:
        """The recording's file (``source``)."""
        return self.source

    @property
    def set_apart(self) -> str | None:
        """Why this request is in no figure (skipped or set apart), or ``None``."""
        return self.skip or self.apart


def http_date_seconds(value: Any) -> float | None:
    """Epoch seconds of an HTTP ``Date`` header value (or a list of them)."""
    if isinstance(value, list):
        value = value[0] if value else None
    if isinstance(value, bytes):
        value = value.decode("latin-1")
    if not isinstance(value, str):
        return None
    try:
        return parsedate_to_datetime(value).timestamp()
    except (TypeError, ValueError, IndexError):
        return None


def iso_seconds(value: Any) -> float | None:
    """Epoch seconds of an ISO 8601 time (UTC when it names no zone), or of
    epoch seconds / milliseconds; ``None`` for anything else."""
    if isinstance(value, (int, float)) and not isinstance(value, bool):
        return float(value) / (1000.0 if value > 1e11 else 1.0)
    if not isinstance(value, str):
        return None
    try:
        dt = datetime.fromisoformat(value.replace("Z", "+00:00"))
    except ValueError:
        return None
    if dt.tzinfo is None:
        dt = dt.replace(tzinfo=UTC)
    return dt.timestamp()


def iso_text(seconds: float | None) -> str | None:
    """Epoch seconds as ISO 8601 UTC to the millisecond (``2026-11-30T12:00:00.123Z``),
    the form snapshots store; ``None`` when unknown or out of range."""
    if seconds is None:
        return None
    try:
        dt = datetime.fromtimestamp(seconds, tz=UTC)
    except (ValueError, OverflowError, OSError):
        return None
    return dt.strftime("%Y-%m-%dT%H:%M:%S.") + f"{dt.microsecond // 1000:03d}Z"


def header(headers: Any, name: str) -> str | None:
    """The first value of header ``name`` (lower case; any case in the
    recording) in a mapping of values or lists (vcrpy, Ruby VCR, snapshots),
    a list of ``{"name", "value"}`` (HAR) or ``(name, value)`` pairs
    (:attr:`Exchange.headers`); ``None`` when absent."""
    if isinstance(headers, Mapping):
        items: Any = headers.items()
    elif isinstance(headers, (list, tuple)):
        items = ((h.get("name"), h.get("value")) if isinstance(h, dict) else h for h in headers
                 if isinstance(h, dict) or (isinstance(h, (list, tuple)) and len(h) == 2))
    else:
        return None
    for k, v in items:
        if str(k).lower() == name:
            if isinstance(v, (list, tuple)):
                v = v[0] if v else None
            return None if v is None else v.decode("latin-1") if isinstance(v, bytes) else str(v)
    return None
