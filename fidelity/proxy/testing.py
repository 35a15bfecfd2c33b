"""Run the proxy and the scripted upstream in a background thread, for tests
and for the ``fidelity_upstream`` pytest fixture.

>>> from fidelity.proxy.script import parse_script
>>> with UpstreamThread(parse_script({"defaults": {"text": "hi"}})) as up:
...     up.url.startswith("http://127.0.0.1:")
True
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any, Self

from .script import Script
from .server import RecordingProxy
from .upstream import ScriptedUpstream

__all__ = ["UpstreamThread", "ProxyThread"]


class _LoopThread:
    """An event loop in a daemon thread running one server object (its ``close``
    stops the server, then the loop); a context manager."""

    def __init__(self, server: Any, port: int) -> None:
        self.loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self.loop.run_forever, daemon=True, name="fidelity-server")
        self._thread.start()
        self._server = server
        try:
            self.port: int = self._call(server.start("127.0.0.1", port))
        except BaseException:
            self._stop_loop()
            raise
        self.url = f"http://127.0.0.1:{self.port}"

    def _call(self, coro: Any, timeout: float = 60.0) -> Any:
        return asyncio.run_coroutine_threadsafe(coro, self.loop).result(timeout)

    def _stop_loop(self) -> None:
        self.loop.call_soon_threadsafe(self.loop.stop)
        self._thread.join(10)
        self.loop.close()

    def close(self) -> None:
        self._call(self._server.close())
        self._stop_loop()

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()


class UpstreamThread(_LoopThread):
    """A :class:`ScriptedUpstream` listening on ``127.0.0.1`` (``url``,
    ``received``); a context manager."""

    def __init__(self, script: Script, *, port: int = 0, **options: Any) -> None:
        self.server = ScriptedUpstream(script, **options)
        super().__init__(self.server, port)

    @property
    def received(self) -> list[Any]:
        return list(self.server.received)


class ProxyThread(_LoopThread):
    """A :class:`RecordingProxy` in front of ``upstream``, writing to ``out``;
    ``lines`` collects its summary lines."""

    def __init__(self, upstream: str, out: str | Path, *, port: int = 0,
                 line: Callable[[str], None] | None = None, **options: Any) -> None:
        self.lines: list[str] = []
        self.proxy = RecordingProxy(upstream, out, line=line or self.lines.append, **options)
        super().__init__(self.proxy, port)
