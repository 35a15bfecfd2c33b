"""Serving an aiohttp application on a host and port: the one start-up step
the recording proxy and the scripted upstream share."""

from __future__ import annotations

from typing import Any

from ..errors import FidelityError

__all__ = ["listen"]


async def listen(runner: Any, host: str, port: int, error: type[FidelityError] = FidelityError) -> int:
    """Set ``runner`` (an ``aiohttp.web.AppRunner``) up and serve it on
    ``host:port`` (port 0: any free one); the port it listens on. A port
    that cannot be bound cleans the runner up and raises ``error`` with one
    line naming the address."""
    from aiohttp import web

    await runner.setup()
    site = web.TCPSite(runner, host, port, reuse_address=True)
    try:
        await site.start()
    except OSError as exc:
        await runner.cleanup()
        raise error(f"cannot listen on {host}:{port}: {exc.strerror or exc}") from None
    sockets = site._server.sockets if site._server else []  # type: ignore[attr-defined]  # aiohttp's private _server is an asyncio.Server
    return int(sockets[0].getsockname()[1]) if sockets else port
