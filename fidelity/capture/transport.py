"""Record every request an httpx (or httpx2) client sends as a snapshot file:
:class:`RecordingTransport` wraps a transport, :func:`record` adds a
``request`` event hook to an httpx or SDK client (hooks run after auth:
https://www.python-httpx.org/advanced/event-hooks/). Each body is redacted
and written before the request is sent. docs/ci-and-capture.md."""

from __future__ import annotations

import importlib
import threading
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from .redact import Redactor
from .snapshot import SnapshotWriter, from_request, write


def _modules() -> list[Any]:
    found = []
    for name in ("httpx", "httpx2"):
        try:
            found.append(importlib.import_module(name))
        except ImportError:
            pass
    return found


#: httpx and its successor httpx2 (which anthropic 2.x, openai 3.x and
#: google-genai 3.x build on) share this API; the recorder works with both.
_HTTPX = _modules()
_SYNC_CLIENTS: tuple[type, ...] = tuple(m.Client for m in _HTTPX)
_ASYNC_CLIENTS: tuple[type, ...] = tuple(m.AsyncClient for m in _HTTPX)

__all__ = [
    "Recorder",
    "RecordingTransport",
    "AsyncRecordingTransport",
    "record",
    "httpx_client_of",
]


class Recorder:
    """Writes each request it is given to ``folder`` as a snapshot;
    ``secrets``: extra strings to scrub (credentials are removed regardless)."""

    def __init__(self, folder: str | Path, *, secrets: Iterable[str] = (), source: str = "capture") -> None:
        self.folder = Path(folder)
        self.redactor = Redactor(secrets)
        self.source = source
        self._writer = SnapshotWriter(self.folder)
        self._lock = threading.Lock()

    @property
    def paths(self) -> list[Path]:
        """Snapshot files written so far, in order."""
        return list(self._writer.written)

    def record(self, request: Any) -> Path:
        """Snapshot one request whose body has been read."""
        with self._lock:  # one redactor, learning secrets as it goes
            snap = from_request(
                method=request.method,
                url=str(request.url),
                headers=request.headers.multi_items(),
                body=bytes(request.content),
                source=self.source,
                redactor=self.redactor,
                seq=self._writer.next_seq(),
            )
            path = write(self.folder, snap, redactor=self.redactor)
            self._writer.written.append(path)
            return path

    def hook(self, request: Any) -> None:
        """A synchronous httpx ``request`` event hook."""
        request.read()
        self.record(request)

    async def async_hook(self, request: Any) -> None:
        """An asynchronous httpx ``request`` event hook."""
        await request.aread()
        self.record(request)


class RecordingTransport:
    """A transport (``httpx`` or ``httpx2``, duck-typed) that records each
    request, then passes it to ``inner``."""

    def __init__(self, inner: Any, folder: str | Path | Recorder, *, secrets: Iterable[str] = ()) -> None:
        self.inner = inner
        self.recorder = folder if isinstance(folder, Recorder) else Recorder(folder, secrets=secrets)

    def handle_request(self, request: Any) -> Any:
        request.read()
        self.recorder.record(request)
        return self.inner.handle_request(request)

    def close(self) -> None:
        self.inner.close()

    def __enter__(self) -> RecordingTransport:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()


class AsyncRecordingTransport:
    """The ``AsyncClient`` counterpart of :class:`RecordingTransport`."""

    def __init__(self, inner: Any, folder: str | Path | Recorder, *, secrets: Iterable[str] = ()) -> None:
        self.inner = inner
        self.recorder = folder if isinstance(folder, Recorder) else Recorder(folder, secrets=secrets)

    async def handle_async_request(self, request: Any) -> Any:
        await request.aread()
        self.recorder.record(request)
        return await self.inner.handle_async_request(request)

    async def aclose(self) -> None:
        await self.inner.aclose()

    async def __aenter__(self) -> AsyncRecordingTransport:
        return self

    async def __aexit__(self, *exc: Any) -> None:
        await self.aclose()


def httpx_client_of(client: Any) -> list[Any]:
    """The httpx client(s) behind ``client``: itself, the ``_client`` of an
    openai / anthropic SDK client, or a google-genai ``Client``'s two (private
    attributes as of openai 3.57, anthropic 2.14, google-genai 3.6)."""
    kinds = _SYNC_CLIENTS + _ASYNC_CLIENTS
    if isinstance(client, kinds):
        return [client]
    found: list[Any] = []
    inner = getattr(client, "_client", None)  # openai.OpenAI, anthropic.Anthropic
    if isinstance(inner, kinds):
        found.append(inner)
    api = getattr(client, "_api_client", None)  # google.genai.Client
    for attr in ("_httpx_client", "_async_httpx_client"):
        c = getattr(api, attr, None) if api is not None else None
        if isinstance(c, kinds):
            found.append(c)
    if not found:
        raise TypeError(
            f"cannot find an httpx client in {type(client).__name__}; pass an httpx.Client, "
            "or build the SDK client with http_client=httpx.Client(transport=RecordingTransport(...))"
        )
    return found


def record(client: Any, folder: str | Path, *, secrets: Iterable[str] = ()) -> Recorder:
    """Attach a :class:`Recorder` to ``client`` (an httpx client or an SDK
    client built on one) and return it; every later request is recorded."""
    recorder = Recorder(folder, secrets=secrets)
    for c in httpx_client_of(client):
        hooks = dict(c.event_hooks)
        hook = recorder.async_hook if isinstance(c, _ASYNC_CLIENTS) else recorder.hook
        hooks["request"] = [*hooks.get("request", []), hook]
        hooks.setdefault("response", [])
        c.event_hooks = hooks
    return recorder
