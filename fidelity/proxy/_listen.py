"""Serving an aiohttp application on a host and port: the one start-up step
the recording proxy and the scripted upstream share, with the connection
limits of :mod:`fidelity.proxy._guard`."""

from __future__ import annotations

import asyncio
from typing import Any

from ..errors import FidelityError
from ._guard import ConnectionGuard

__all__ = ["listen"]


def _site(runner: Any, host: str, port: int, guard: ConnectionGuard | None) -> Any:
    """A ``web.TCPSite`` whose connections go through ``guard`` (aiohttp's
    own site hands the bare request handler to ``loop.create_server``)."""
    from aiohttp import web

    class GuardedSite(web.TCPSite):
        async def start(self) -> None:
            self._runner._reg_site(self)
            factory = runner.server if guard is None else guard.wrap(runner.server)
            self._server = await asyncio.get_running_loop().create_server(factory, host, port, reuse_address=True)

    return GuardedSite(runner, host, port)


async def listen(runner: Any, host: str, port: int, error: type[FidelityError] = FidelityError,
                 guard: ConnectionGuard | None = None) -> int:
    """Set ``runner`` (an ``aiohttp.web.AppRunner``) up and serve it on
    ``host:port`` (port 0: any free one); the port it listens on. A port
    that cannot be bound cleans the runner up and raises ``error`` with one
    line naming the address."""
    await runner.setup()
    site = _site(runner, host, port, guard)
    try:
        await site.start()
    except OSError as exc:
        await runner.cleanup()
        raise error(f"cannot listen on {host}:{port}: {exc.strerror or exc}") from None
    sockets = site._server.sockets if site._server else []
    return int(sockets[0].getsockname()[1]) if sockets else port
