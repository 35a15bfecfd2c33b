"""``fidelity proxy``: a recording reverse proxy for harnesses in any language.

A harness points its base URL at the proxy; each request is forwarded to
the upstream unchanged (same method, path, query, headers and body bytes),
the reply is streamed back as it arrives, and the request is written as a
snapshot (:mod:`fidelity.snapshot` format, secrets redacted before any byte
reaches disk) with the usage the reply reported in its ``response`` member.
One line per request says which earlier request it reads from, where it
diverges and why, predicted against reported cached tokens, and the dollars
lost (:mod:`fidelity.proxy.parent`).

Why aiohttp: one maintained package gives both halves a streaming proxy
needs, an HTTP server whose handlers write a response chunk by chunk
(``web.StreamResponse``) and a client that hands back the upstream's body
chunk by chunk without decoding it (``auto_decompress=False``), on one
event loop, so hundreds of concurrent streams cost one thread. An ASGI
server plus httpx would be two stacks (and a server process model) for
the same thing.

URL mapping: ``--upstream https://api.anthropic.com`` and a request for
``/v1/messages?beta=true`` go to ``https://api.anthropic.com/v1/messages?beta=true``;
an upstream with a path prefixes it (``http://host/api`` + ``/v1/...``).
Requests without a body (``GET /v1/models``) are forwarded and listed but
not written.
"""

from __future__ import annotations

import asyncio
import os
import signal
import sys
import tempfile
import time
from collections import deque
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from ..errors import FidelityError
from ..traffic.usage import Decoder, StreamReader
from . import _store
from ._listen import listen
from .parent import ParentIndex, Seen, judge, view_digests

__all__ = ["RecordingProxy", "ProxyError", "serve", "HOP_BY_HOP"]

#: headers that describe one hop, not the message (RFC 9110 section 7.6.1);
#: never forwarded in either direction
HOP_BY_HOP = frozenset({"connection", "keep-alive", "proxy-authenticate", "proxy-authorization", "te",
                        "trailer", "trailers", "transfer-encoding", "upgrade", "proxy-connection"})


class ProxyError(FidelityError):
    """A proxy that cannot start (bad upstream, port in use, folder not writable)."""


@dataclass
class _Stats:
    requests: int = 0
    written: int = 0
    failed: int = 0
    #: the last summary lines (bounded)
    lines: deque[str] = field(default_factory=lambda: deque(maxlen=1000))


def _check_upstream_url(url: str) -> tuple[str, str, int]:
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        raise ProxyError(f"--upstream {url!r}: expected an http:// or https:// URL")
    port = parts.port or (443 if parts.scheme == "https" else 80)
    return parts.scheme, parts.hostname, port


def _check_folder(out: Path) -> None:
    try:
        out.mkdir(parents=True, exist_ok=True)
        fd, probe = tempfile.mkstemp(prefix=".fidelity-probe-", dir=out)
        os.close(fd)
        os.unlink(probe)
    except OSError as exc:
        raise ProxyError(f"{out}: cannot write snapshots there ({exc.strerror or exc})") from None


def _is_stream(content_type: str | None) -> bool:
    return (content_type or "").split(";")[0].strip().lower() == "text/event-stream"


class RecordingProxy:
    """The proxy as an object: :meth:`start`, then :meth:`close`.

    ``line``: called with each request's summary line (default: print to
    stdout); ``judge_requests``: run the differ on each (parent, child)
    pair for the summary line (the snapshots are written either way).
    """

    def __init__(self, upstream: str, out: str | Path, *, line: Callable[[str], None] | None = None,
                 judge_requests: bool = True, index_limit: int = 4096) -> None:
        self.upstream = upstream.rstrip("/")
        _check_upstream_url(self.upstream)
        self.out = Path(out)
        self.line = line or (lambda s: print(s, flush=True))
        self.judge_requests = judge_requests
        self.redactor = _store.Redactor()
        self.index = ParentIndex(index_limit)
        self.stats = _Stats()
        self._next_seq = self._first_seq()
        # one worker: snapshot writes and verdicts run off the event loop, in
        # arrival order, and use one core at most (CPU is shared with the harness)
        self._pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="fidelity-proxy")
        self._pending: set[asyncio.Future[Any]] = set()
        self._runner: Any = None
        self._session: Any = None
        self.port: int | None = None

    def _first_seq(self) -> int:
        n = 1
        if self.out.is_dir():
            for p in self.out.glob("*.snapshot"):
                head = p.name.split("-", 1)[0]
                if head.isdigit():
                    n = max(n, int(head) + 1)
        return n

    # -- lifecycle ------------------------------------------------------------
    async def start(self, host: str = "127.0.0.1", port: int = 0, *, check_upstream: bool = True) -> int:
        """Check the folder and the upstream, listen; returns the port."""
        from aiohttp import ClientSession, ClientTimeout, TCPConnector, web

        _check_folder(self.out)
        if check_upstream:
            await self._probe_upstream()
        app = web.Application(client_max_size=256 << 20)
        app.router.add_route("*", "/{tail:.*}", self._handle)
        self._session = ClientSession(
            connector=TCPConnector(limit=512, force_close=False),
            auto_decompress=False,
            timeout=ClientTimeout(total=None, sock_connect=30, sock_read=None),
            skip_auto_headers=("User-Agent",),
            cookie_jar=_no_cookies(),
        )
        self._runner = web.AppRunner(app, access_log=None, handle_signals=False, shutdown_timeout=5.0)
        try:
            self.port = await listen(self._runner, host, port, ProxyError)
        except ProxyError:
            await self._session.close()
            raise
        return self.port

    async def _probe_upstream(self) -> None:
        scheme, host, port = _check_upstream_url(self.upstream)
        try:
            _, writer = await asyncio.wait_for(asyncio.open_connection(host, port), timeout=5.0)
        except (TimeoutError, OSError) as exc:
            why = "timed out" if isinstance(exc, asyncio.TimeoutError) else (exc.strerror or str(exc))
            raise ProxyError(f"upstream {self.upstream} is unreachable ({why})") from None
        writer.close()
        try:
            await writer.wait_closed()
        except OSError:
            pass

    async def close(self) -> None:
        """Stop listening, finish in-flight writes and verdicts."""
        if self._runner is not None:
            await self._runner.cleanup()
            self._runner = None
        if self._pending:
            await asyncio.gather(*list(self._pending), return_exceptions=True)
        if self._session is not None:
            await self._session.close()
            self._session = None
        self._pool.shutdown(wait=True)

    # -- one request ------------------------------------------------------------
    async def _handle(self, request: Any) -> Any:
        from aiohttp import ClientError, web

        started = time.monotonic()
        body = await request.read()
        target = self.upstream + request.raw_path
        self.stats.requests += 1
        snap = None
        seen: Seen | None = None
        parent: Seen | None = None
        if body:
            seq = self._next_seq
            self._next_seq += 1
            snap = _store.from_request(method=request.method, url=target, headers=list(request.headers.items()),
                                       body=body, source="proxy", redactor=self.redactor, seq=seq)
            snap = _by_path(snap, request.path)
            generates = not request.path.rstrip("/").endswith("count_tokens")
            if generates and snap.provider:
                digests, first = view_digests(snap.provider, body, target)
                if digests:
                    seen = Seen(snap.filename, snap.provider, snap.model, _endpoint_key(target), digests, first)
                    parent = self.index.observe(seen)
            snap = replace(snap, parent=parent.name if parent else None)

        headers = [(k, v) for k, v in request.headers.items() if k.lower() not in HOP_BY_HOP and k.lower() != "host"]
        response_meta: dict[str, Any] = {}
        reader: StreamReader | None = None
        resp_out: Any = None
        try:
            async with self._session.request(request.method, target, headers=headers, data=body or None,
                                             allow_redirects=False) as up:
                stream = _is_stream(up.headers.get("Content-Type"))
                reader = StreamReader(stream=stream)
                decoder = Decoder(up.headers.get("Content-Encoding"))
                resp_out = web.StreamResponse(status=up.status, reason=up.reason)
                for k, v in up.headers.items():
                    if k.lower() not in HOP_BY_HOP:
                        resp_out.headers.add(k, v)
                response_meta = {"status": up.status, "stream": stream}
                await resp_out.prepare(request)
                async for chunk in up.content.iter_any():
                    await resp_out.write(chunk)
                    if decoder.ok:
                        reader.feed(decoder.feed(chunk))
                await resp_out.write_eof()
        except (TimeoutError, ClientError, OSError) as exc:
            self.stats.failed += 1
            where = "upstream" if resp_out is None or not resp_out.prepared else "stream"
            response_meta = {**response_meta, "error": f"{where}: {type(exc).__name__}: {exc}"[:300]}
            if resp_out is None or not resp_out.prepared:
                resp_out = web.json_response({"error": {"type": "proxy_error", "message": f"fidelity proxy: upstream "
                                                        f"{self.upstream} failed: {type(exc).__name__}"}}, status=502)
        finally:
            usage = reader.close() if reader is not None else None
            if usage is not None:
                response_meta["usage"] = usage
            response_meta["elapsed_s"] = round(time.monotonic() - started, 3)
            if snap is not None:
                fut = asyncio.get_running_loop().run_in_executor(
                    self._pool, self._finish, snap, response_meta, seen, parent, usage, target)
            else:
                fut = asyncio.get_running_loop().run_in_executor(
                    self._pool, self.line, f"---- {request.method} {request.path} {response_meta.get('status', 502)} "
                    "(no body, not recorded)")
            self._pending.add(fut)
            fut.add_done_callback(self._pending.discard)
        return resp_out

    def _finish(self, snap: Any, response: dict[str, Any], seen: Seen | None, parent: Seen | None,
                usage: dict[str, Any] | None, target: str) -> None:
        """Write the snapshot, then print its line (worker thread)."""
        try:
            path = _store.write_snapshot(self.out, snap, self.redactor, response)
            self.stats.written += 1
        except Exception as exc:  # a full disk, a secret that slipped through: say so, keep proxying
            self.line(f"#{snap.seq:04d} NOT WRITTEN: {exc}")
            return
        text = self._summary(snap, response, seen, parent, usage, target, path)
        self.stats.lines.append(text)
        self.line(text)

    def _summary(self, snap: Any, response: dict[str, Any], seen: Seen | None, parent: Seen | None,
                 usage: dict[str, Any] | None, target: str, path: Path) -> str:
        head = f"#{snap.seq:04d} {snap.provider or '?'} {snap.model or '?'} {response.get('status', 'ERR')}"
        reported = "?" if usage is None or usage.get("cache_read") is None else f"{usage['cache_read']:,}"
        if "error" in response:
            head += f" [{response['error']}]"
        if seen is None:
            return f"{head} · not a generation request of a known dialect · cached reported {reported}"
        if parent is None or not self.judge_requests:
            return f"{head} · reads from nothing earlier (root) · cached predicted 0 / reported {reported}"
        parent_seq = parent.name.split("-", 1)[0]
        try:
            p_body = _store.snapshot.read(self.out / parent.name).body
            v = judge(p_body, snap.body, snap.provider, model=snap.model, endpoint=target)
        except Exception as exc:
            return f"{head} · reads #{parent_seq} · no verdict ({exc})"
        cause = v.cause + (f": {v.detail}" if v.detail else "")
        usd = "" if v.usd_lost is None else f" ${v.usd_lost:.4f}"
        est = " (estimated)" if v.estimated else ""
        return (f"{head} · reads #{parent_seq} · first divergence {v.divergence()} · {cause[:160]} · "
                f"cached predicted {v.predicted_cached:,} / reported {reported} · lost {v.lost_tokens:,} tok{usd}{est}")


def _by_path(snap: Any, path: str) -> Any:
    """The API path is stronger evidence than body marks when the host is not
    a known provider's (a local or third-party endpoint): ``/v1/messages`` is
    Anthropic Messages even when the body would also pass for DeepSeek."""
    from .. import wire
    from .upstream import dialect_of_path

    by_path = dialect_of_path(path)
    if by_path in (None, "anthropic-count") or snap.provider == by_path:
        return snap
    known_host = snap.url and urlsplit(snap.url).hostname and any(
        h in (urlsplit(snap.url).hostname or "") for h in ("openai", "anthropic", "google", "deepseek", "aliyuncs"))
    if known_host:
        return snap
    if by_path == "openai-chat" and snap.provider in ("deepseek", "dashscope", "vllm"):
        return snap  # OpenAI-compatible dialects share the chat path; the body marks say which
    return replace(snap, provider=by_path, family=wire.get(by_path).provider)


def _endpoint_key(url: str) -> str:
    """Requests share a cache only at one endpoint: scheme, host and port."""
    p = urlsplit(url)
    return f"{p.scheme}://{p.netloc}"


def _no_cookies() -> Any:
    from aiohttp import DummyCookieJar

    return DummyCookieJar()  # cookies pass through as headers; the proxy keeps none


async def _serve(proxy: RecordingProxy, host: str, port: int, ready: Callable[[int], None] | None) -> int:
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        try:
            loop.add_signal_handler(sig, stop.set)
        except (NotImplementedError, RuntimeError):  # not the main thread
            pass
    bound = await proxy.start(host, port)
    if ready is not None:
        ready(bound)
    try:
        await stop.wait()
    finally:
        await proxy.close()
    return 0


def serve(upstream: str, out: str | Path, *, host: str = "127.0.0.1", port: int = 8080,
          line: Callable[[str], None] | None = None, judge_requests: bool = True,
          ready: Callable[[int], None] | None = None) -> int:
    """Run the proxy until SIGINT/SIGTERM; flush and return 0."""
    proxy = RecordingProxy(upstream, out, line=line, judge_requests=judge_requests)
    code = asyncio.run(_serve(proxy, host, port, ready))
    err = sys.stderr
    print(f"fidelity proxy: {proxy.stats.requests} requests, {proxy.stats.written} snapshots in {proxy.out}"
          + (f", {proxy.stats.failed} upstream failures" if proxy.stats.failed else ""), file=err, flush=True)
    return code
