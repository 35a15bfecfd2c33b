"""Limits on client connections, shared by the recording proxy and the
scripted upstream: a deadline for a request's headers, a cap on open
connections (past it a ``503``, then close), and :class:`FailureLog`, one
line per kind of failure per interval. Why: docs/proxy.md, "Slow clients,
floods and broken streams"."""

from __future__ import annotations

import asyncio
import resource
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

__all__ = ["FailureLog", "ConnectionGuard", "default_max_connections"]

#: refused connections allowed to linger at once (to deliver their 503);
#: past it a refused connection is closed at once
_REFUSED_LINGERING = 32
#: descriptors a server needs besides client connections (listening socket,
#: snapshot writes, the event loop's own, tokenizer files), refused ones included
_RESERVED_FDS = 64 + _REFUSED_LINGERING

_BUSY = (b"HTTP/1.1 503 Service Unavailable\r\nContent-Type: text/plain\r\nConnection: close\r\n"
         b"Content-Length: 44\r\n\r\nfidelity: too many open connections; retry.\n")


def default_max_connections() -> int:
    """Open client connections allowed by default: half the process's
    descriptors (a proxied request holds two) less a reserve, at most 1,024."""
    try:
        soft, _ = resource.getrlimit(resource.RLIMIT_NOFILE)
    except (OSError, ValueError):  # pragma: no cover - a platform without limits
        soft = 1024
    if soft == resource.RLIM_INFINITY:
        soft = 1 << 16
    return max(8, min(1024, (soft - _RESERVED_FDS) // 2))


class FailureLog:
    """One line per kind of failure: the first occurrence at once, later ones
    at most every ``interval`` seconds (called from the event loop thread)."""

    def __init__(self, emit: Callable[[str], None], *, interval: float = 10.0,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self.emit = emit
        self.interval = interval
        self.clock = clock
        #: occurrences of each kind since start
        self.counts: dict[str, int] = {}
        self._last: dict[str, float] = {}
        self._unsaid: dict[str, int] = {}

    def note(self, kind: str, detail: str) -> None:
        """Record one failure of ``kind``; a line unless one was printed within ``interval``."""
        self.counts[kind] = self.counts.get(kind, 0) + 1
        now = self.clock()
        last = self._last.get(kind)
        if last is not None and now - last < self.interval:
            self._unsaid[kind] = self._unsaid.get(kind, 0) + 1
            return
        self._last[kind] = now
        more = self._unsaid.pop(kind, 0)
        suffix = f" (and {more} more since the last such line)" if more else ""
        self.emit(f"fidelity: {kind}: {detail}{suffix}")

    def flush(self) -> None:
        """Say how many occurrences went unprinted (at shutdown)."""
        for kind in sorted(self._unsaid):
            self.emit(f"fidelity: {kind}: {self._unsaid[kind]} more not printed ({self.counts[kind]} in all)")
        self._unsaid.clear()

    def loop_exception_handler(self, loop: asyncio.AbstractEventLoop, context: dict[str, Any]) -> None:
        """For ``loop.set_exception_handler``: asyncio's own errors as rate-limited lines."""
        exc = context.get("exception")
        message = str(context.get("message") or "event loop error")
        kind = "event loop" if exc is None else f"event loop {type(exc).__name__}"
        self.note(kind, message + (f": {exc}" if exc is not None else ""))


class _Refuse(asyncio.Protocol):
    """A connection over the cap: answer 503, discard what the client still
    sends and close after a second at most (closing at once with the request
    unread makes the kernel send a reset that can destroy the 503)."""

    LINGER_S = 1.0

    def __init__(self, guard: ConnectionGuard) -> None:
        self.guard = guard
        self._timer: asyncio.TimerHandle | None = None

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        assert isinstance(transport, asyncio.Transport)
        self.transport = transport
        transport.write(_BUSY)
        if self.guard.lingering >= _REFUSED_LINGERING or not transport.can_write_eof():
            transport.abort()  # a flood: the descriptor matters more than the 503
            return
        self.guard.lingering += 1
        transport.write_eof()
        self._timer = asyncio.get_running_loop().call_later(self.LINGER_S, transport.abort)

    def data_received(self, data: bytes) -> None:
        pass  # the request is refused: its bytes are dropped

    def eof_received(self) -> bool:
        self.transport.close()
        return False

    def connection_lost(self, exc: BaseException | None) -> None:
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
            self.guard.lingering -= 1


class _Guarded(asyncio.Protocol):
    """Wraps one aiohttp request handler protocol, forwarding every call, and
    closes the connection when request headers do not arrive in time."""

    def __init__(self, guard: ConnectionGuard, inner: Any) -> None:
        self.guard = guard
        self.inner = inner
        self.transport: asyncio.Transport | None = None
        self.busy = 0
        self._timer: asyncio.TimerHandle | None = None

    def __getattr__(self, name: str) -> Any:  # anything else aiohttp asks of its protocol
        return getattr(self.inner, name)

    def _arm(self) -> None:
        if self._timer is None and self.busy == 0 and self.transport is not None:
            self._timer = asyncio.get_running_loop().call_later(self.guard.header_timeout, self._expire)

    def disarm(self) -> None:
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None

    def _expire(self) -> None:
        self._timer = None
        if self.busy or self.transport is None:
            return
        self.guard.log.note("header timeout", f"closed a connection whose request headers did not arrive within "
                                              f"{self.guard.header_timeout:g} s")
        self.transport.abort()

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        assert isinstance(transport, asyncio.Transport)
        self.transport = transport
        self.guard.open[transport] = self
        self._arm()  # a client that connects and sends nothing is timed too
        self.inner.connection_made(transport)

    def connection_lost(self, exc: BaseException | None) -> None:
        self.disarm()
        if self.transport is not None:
            self.guard.open.pop(self.transport, None)
        self.transport = None
        self.guard.count -= 1
        self.inner.connection_lost(exc)

    def data_received(self, data: bytes) -> None:
        self._arm()  # no-op while a handler runs or the deadline already runs
        self.inner.data_received(data)

    def eof_received(self) -> bool | None:
        return self.inner.eof_received()  # type: ignore[no-any-return]

    def pause_writing(self) -> None:
        self.inner.pause_writing()

    def resume_writing(self) -> None:
        self.inner.resume_writing()


class ConnectionGuard:
    """A protocol factory around aiohttp's (``runner.server``) enforcing the
    cap and the header deadline; ``log`` reports each failure kind."""

    def __init__(self, *, max_connections: int | None = None, header_timeout: float = 30.0,
                 log: FailureLog | None = None) -> None:
        if header_timeout <= 0:
            raise ValueError("header_timeout must be positive")
        self.max_connections = max_connections or default_max_connections()
        if self.max_connections < 1:
            raise ValueError("max_connections must be at least 1")
        self.header_timeout = header_timeout
        self.log = log or FailureLog(lambda s: None)
        self.open: dict[asyncio.Transport, _Guarded] = {}
        #: connections accepted and not yet lost (asyncio calls the factory for a
        #: whole batch of accepted sockets before any ``connection_made``)
        self.count = 0
        #: refused connections still delivering their 503
        self.lingering = 0
        self._factory: Callable[[], Any] | None = None

    def wrap(self, factory: Callable[[], Any]) -> Callable[[], asyncio.Protocol]:
        """The factory ``loop.create_server`` gets."""
        self._factory = factory
        return self._make

    def _make(self) -> asyncio.Protocol:
        assert self._factory is not None
        if self.count >= self.max_connections:
            self.log.note("connection cap", f"{self.count} connections open (--max-connections "
                                            f"{self.max_connections}); answered 503 to a new one")
            return _Refuse(self)
        self.count += 1
        return _Guarded(self, self._factory())

    @contextmanager
    def active(self, transport: Any) -> Iterator[None]:
        """Mark a request handler running on ``transport``: no header deadline meanwhile."""
        conn = self.open.get(transport)
        if conn is None:
            yield
            return
        conn.busy += 1
        conn.disarm()
        try:
            yield
        finally:
            conn.busy -= 1
