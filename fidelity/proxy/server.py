"""``fidelity proxy``: a recording reverse proxy for harnesses in any language.
Each request goes to the upstream unchanged and its reply streams back; a
request with a body becomes a redacted snapshot (reported usage in its
``response`` member) and one verdict line (:mod:`.parent`). docs/proxy.md."""

from __future__ import annotations

import asyncio
import signal
import sys
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from .. import formats
from ..errors import FidelityError
from ..providers import placed_url
from ..traffic.usage import Decoder, StreamReader
from . import _store
from ._guard import ConnectionGuard, FailureLog
from ._listen import listen
from .parent import ParentIndex, Seen, Verdict, judge, view_digests

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


def _check_upstream_url(url: str) -> tuple[str, str, int]:
    """``(scheme, host, port)`` of an upstream URL; :class:`ProxyError` (one
    line) for anything else, a malformed host or port included."""
    try:
        parts = urlsplit(url)
        host, port = parts.hostname, parts.port
    except ValueError as exc:  # 'http://[::1' (unclosed bracket), 'http://h:99999' (port out of range)
        raise ProxyError(f"--upstream {url!r}: not a valid URL ({exc})") from None
    if parts.scheme not in ("http", "https") or not host:
        raise ProxyError(f"--upstream {url!r}: expected an http:// or https:// URL")
    return parts.scheme, host, port or (443 if parts.scheme == "https" else 80)


#: seconds an idle kept-alive client connection stays open
KEEPALIVE_S = 75.0


def _is_stream(content_type: str | None) -> bool:
    return (content_type or "").split(";")[0].strip().lower() == "text/event-stream"


class _TooLarge(Exception):
    """The request body is over the size limit."""


class RecordingProxy:
    """The proxy as an object: :meth:`start`, then :meth:`close`. ``line``
    gets each request's summary line (default: stdout), ``log`` each failure
    line (default: stderr; one per kind every ``log_interval`` s);
    ``judge_requests``: run the differ for the summary line. The limits:
    docs/proxy.md, "Slow clients, floods and broken streams"."""

    def __init__(self, upstream: str, out: str | Path, *, line: Callable[[str], None] | None = None,
                 judge_requests: bool = True, index_limit: int = 4096, header_timeout: float = 30.0,
                 body_timeout: float = 60.0, max_connections: int | None = None,
                 log: Callable[[str], None] | None = None, log_interval: float = 10.0,
                 max_body: int = 256 << 20) -> None:
        self.upstream = upstream.rstrip("/")
        _check_upstream_url(self.upstream)
        if body_timeout <= 0 or header_timeout <= 0:
            raise ProxyError("timeouts must be positive numbers of seconds")
        if max_connections is not None and max_connections < 1:
            raise ProxyError("--max-connections must be at least 1")
        self.out = Path(out)
        self.line = line or (lambda s: print(s, flush=True))
        self.judge_requests = judge_requests
        self.body_timeout = body_timeout
        self.max_body = max_body
        self.failures = FailureLog(log or (lambda s: print(s, file=sys.stderr, flush=True)), interval=log_interval)
        self.guard = ConnectionGuard(max_connections=max_connections, header_timeout=header_timeout,
                                     log=self.failures)
        self.redactor = _store.Redactor()
        self.index = ParentIndex(index_limit)
        self.stats = _Stats()
        self._next_seq = _store.snapshot.SnapshotWriter(self.out).next_seq()  # after what the folder holds
        # Two single workers keep CPU work off the event loop, each in arrival
        # order: "intake" redacts a request, finds its parent and registers its
        # body before the reply; "finish" writes snapshots and verdicts, so a
        # verdict backlog never delays forwarding.
        self._intake_pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="fidelity-proxy-intake")
        self._pool = ThreadPoolExecutor(max_workers=1, thread_name_prefix="fidelity-proxy")
        #: redacted bodies of requests whose snapshot is not written yet, by snapshot name
        self._bodies: dict[str, bytes] = {}
        self._pending: set[asyncio.Future[Any]] = set()
        self._runner: Any = None
        self._session: Any = None
        self._loop_handler_set = False
        self.port: int | None = None

    # -- lifecycle ------------------------------------------------------------
    async def start(self, host: str = "127.0.0.1", port: int = 0, *, check_upstream: bool = True) -> int:
        """Check the folder and the upstream, listen; returns the port."""
        from aiohttp import ClientSession, ClientTimeout, TCPConnector, web

        try:
            _store.check_writable(self.out, "snapshots")
        except FidelityError as exc:
            raise ProxyError(str(exc)) from None
        if check_upstream:
            await self._probe_upstream()
        loop = asyncio.get_running_loop()
        if loop.get_exception_handler() is None:  # asyncio's own errors (accept() out of descriptors): one line
            loop.set_exception_handler(self.failures.loop_exception_handler)
            self._loop_handler_set = True
        app = web.Application(client_max_size=self.max_body)
        app.router.add_route("*", "/{tail:.*}", self._handle)
        self._session = ClientSession(
            connector=TCPConnector(limit=self.guard.max_connections, force_close=False),
            auto_decompress=False,
            timeout=ClientTimeout(total=None, sock_connect=30, sock_read=None),
            skip_auto_headers=("User-Agent",),
            cookie_jar=_no_cookies(),
        )
        self._runner = web.AppRunner(app, access_log=None, handle_signals=False, shutdown_timeout=5.0,
                                     keepalive_timeout=KEEPALIVE_S)
        try:
            self.port = await listen(self._runner, host, port, ProxyError, self.guard)
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
        self._intake_pool.shutdown(wait=True)
        self._pool.shutdown(wait=True)
        if self._loop_handler_set:
            asyncio.get_running_loop().set_exception_handler(None)
            self._loop_handler_set = False
        self.failures.flush()

    # -- one request ------------------------------------------------------------
    async def _handle(self, request: Any) -> Any:
        with self.guard.active(request.transport):
            return await self._proxy(request)

    async def _read_body(self, request: Any) -> bytes:
        """The request body; :class:`TimeoutError` when the client sends no
        byte of it for ``body_timeout`` seconds, :class:`_TooLarge` past ``max_body``."""
        parts: list[bytes] = []
        size = 0
        loop = asyncio.get_running_loop()
        async with asyncio.timeout(self.body_timeout) as deadline:
            while True:
                chunk = await request.content.readany()
                if not chunk:
                    break
                size += len(chunk)
                if size > self.max_body:
                    raise _TooLarge
                parts.append(chunk)
                deadline.reschedule(loop.time() + self.body_timeout)
        return b"".join(parts)

    async def _body_or_reply(self, request: Any) -> tuple[bytes | None, Any]:
        """``(body, None)``, or ``(None, reply)`` when the body cannot be read."""
        from aiohttp import web

        try:
            return await self._read_body(request), None
        except TimeoutError:
            self.failures.note("body timeout", f"closed a connection that sent no request body bytes for "
                                               f"{self.body_timeout:g} s ({request.method} {request.path})")
            if request.transport is not None:
                request.transport.abort()
            return None, web.Response(status=408)
        except _TooLarge:
            self.failures.note("body too large", f"refused a request body over {self.max_body:,} bytes")
            return None, web.json_response({"error": {"type": "proxy_error", "message": "fidelity proxy: request "
                                            f"body over {self.max_body:,} bytes"}}, status=413)
        except Exception as exc:  # noqa: BLE001 - narrowed just below
            if not isinstance(exc, (ConnectionError, *_payload_errors())):
                raise
            self.failures.note("client abandoned upload", f"the client closed the connection while sending "
                                                          f"{request.method} {request.path} ({type(exc).__name__})")
            return None, web.Response(status=400)

    async def _proxy(self, request: Any) -> Any:
        from aiohttp import ClientError, web

        started = time.monotonic()
        body, refused = await self._body_or_reply(request)
        if body is None:
            return refused
        target = self.upstream + request.raw_path
        self.stats.requests += 1
        loop = asyncio.get_running_loop()
        intake: asyncio.Future[_Intake] | None = None
        if body:
            seq = self._next_seq
            self._next_seq += 1
            intake = self._submit(loop, self._intake_pool, self._intake, seq, request.method, target,
                                  list(request.headers.items()), body, request.path)

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
            sent = resp_out is not None and resp_out.prepared
            response_meta = {**response_meta, "error": f"{'stream' if sent else 'upstream'}: "
                                                       f"{type(exc).__name__}: {exc}"[:300]}
            if sent:
                # The reply's status and part of its body are out: end the client's
                # connection the way the upstream ended ours (no chunked terminator,
                # short of Content-Length), never as a cleanly finished reply.
                if request.transport is not None:
                    request.transport.close()  # what was written still reaches the client, then EOF
            else:
                resp_out = web.json_response({"error": {"type": "proxy_error", "message": f"fidelity proxy: upstream "
                                                        f"{self.upstream} failed: {type(exc).__name__}"}}, status=502)
        finally:
            usage = reader.close() if reader is not None else None
            if usage is not None:
                response_meta["usage"] = usage
            response_meta["elapsed_s"] = round(time.monotonic() - started, 3)
            if intake is not None:
                self._after(intake, response_meta, usage, target)
            else:
                self._submit(loop, self._pool, self.line, f"---- {request.method} {request.path} "
                             f"{response_meta.get('status', 502)} (no body, not recorded)")
        return resp_out

    def _submit(self, loop: asyncio.AbstractEventLoop, pool: ThreadPoolExecutor, fn: Callable[..., Any],
                *args: Any) -> asyncio.Future[Any]:
        """``fn(*args)`` on ``pool``, awaited by :meth:`close`."""
        fut = loop.run_in_executor(pool, fn, *args)
        self._pending.add(fut)
        fut.add_done_callback(self._pending.discard)
        return fut

    def _after(self, intake: asyncio.Future[_Intake], response: dict[str, Any], usage: dict[str, Any] | None,
               target: str) -> None:
        """Once the request's intake is done, queue its snapshot and verdict."""
        loop = asyncio.get_running_loop()

        def queue(done: asyncio.Future[_Intake]) -> None:
            if done.cancelled() or done.exception() is not None:
                self.failures.note("snapshot not written", f"could not read a request for its snapshot "
                                                           f"({done.exception()!r})"[:300])
                return
            self._submit(loop, self._pool, self._finish, done.result(), response, usage, target)

        if intake.done():
            queue(intake)
        else:
            intake.add_done_callback(queue)

    def _intake(self, seq: int, method: str, target: str, headers: list[tuple[str, str]], body: bytes,
                path: str) -> _Intake:
        """Redact the request, find the earlier request it reads from and
        register its body (intake worker, in arrival order)."""
        snap = _store.from_request(method=method, url=target, headers=headers, body=body, source="proxy",
                                   redactor=self.redactor, seq=seq)
        # snap.provider: the dialect fidelity.wire.evidence.detect_request decides, as the scripted upstream does
        seen = parent = None
        if not path.rstrip("/").endswith("count_tokens") and snap.provider:
            digests, first = view_digests(snap.provider, snap.body, placed_url(target))
            if digests:
                seen = Seen(snap.filename, snap.provider, snap.model, _endpoint_key(target), digests, first)
                self._bodies[snap.filename] = snap.body  # before any later request can name it as its parent
                parent = self.index.observe(seen)
        snap = replace(snap, parent=parent.name if parent else None)
        return _Intake(snap, seen, parent)

    def _finish(self, got: _Intake, response: dict[str, Any], usage: dict[str, Any] | None, target: str) -> None:
        """Write the snapshot, then print its line (finish worker)."""
        snap = got.snap
        try:
            path = _store.snapshot.write(self.out, snap, redactor=self.redactor, response=response)
            self.stats.written += 1
        except Exception as exc:  # a full disk, a secret that slipped through: say so, keep proxying
            self.line(f"#{snap.seq:04d} NOT WRITTEN: {exc}")
            return
        finally:
            self._bodies.pop(snap.filename, None)  # on disk now (or never): later verdicts read the file
        text = self._summary(snap, response, got.seen, got.parent, usage, target, path)
        self.line(text)

    def _parent_body(self, name: str) -> bytes:
        body = self._bodies.get(name)
        return body if body is not None else _store.snapshot.read(self.out / name).body

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
            v = judge(self._parent_body(parent.name), snap.body, snap.provider, model=snap.model,
                      endpoint=placed_url(target), with_breaks=True)
        except Exception as exc:
            return f"{head} · reads #{parent_seq} · no verdict ({exc})"
        cause = v.cause + (f": {v.detail}" if v.detail else "")
        usd = "" if v.usd_lost is None else f" {formats.usd(v.usd_lost)}"
        est = " (estimated)" if v.estimated else ""
        return (f"{head} · reads #{parent_seq} · first divergence {v.divergence()} · {cause[:160]} · "
                f"cached predicted {v.predicted_cached:,} / reported {reported} · lost {v.lost_tokens:,} tok{usd}{est}"
                + _more(v))


@dataclass(frozen=True)
class _Intake:
    """A request after intake: its redacted snapshot (parent named), what the
    index remembers of it and the request it reads from."""

    snap: Any
    seen: Seen | None
    parent: Seen | None


def _payload_errors() -> tuple[type[Exception], ...]:
    """What reading a request body raises when the client breaks off (a
    truncated chunked or Content-Length body)."""
    from aiohttp.http_exceptions import HttpProcessingError
    from aiohttp.web_protocol import RequestPayloadError

    return (HttpProcessingError, RequestPayloadError)


def _more(v: Verdict) -> str:
    """`` · +2 more breaks; all fixed keeps 16,991`` (the list: ``fidelity diff``)."""
    if v.kept_if_fixed is None:
        return ""
    more = f" · +{v.more_breaks} more break{'s' if v.more_breaks != 1 else ''};" if v.more_breaks else " ·"
    return f"{more} all fixed keeps {v.kept_if_fixed:,}"


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
          ready: Callable[[int], None] | None = None, **limits: Any) -> int:
    """Run the proxy until SIGINT/SIGTERM; flush and return 0. ``limits``:
    ``header_timeout``, ``body_timeout``, ``max_connections`` (see
    :class:`RecordingProxy`)."""
    proxy = RecordingProxy(upstream, out, line=line, judge_requests=judge_requests, **limits)
    code = asyncio.run(_serve(proxy, host, port, ready))
    err = sys.stderr
    print(f"fidelity proxy: {proxy.stats.requests} requests, {proxy.stats.written} snapshots in {proxy.out}"
          + (f", {proxy.stats.failed} upstream failures" if proxy.stats.failed else ""), file=err, flush=True)
    return code
