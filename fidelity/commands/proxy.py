"""``fidelity proxy --upstream URL --out DIR``: record every request a harness
sends, in any language, as redacted snapshots; one line per request."""

from __future__ import annotations

import argparse

from ._args import positive_int, require_aiohttp

__all__ = ["HELP", "add_arguments", "run"]

HELP = ("Recording reverse proxy: point a harness's base URL at it; each request is forwarded unchanged, "
        "written as a snapshot with the reported usage, and judged against the request it reads from.")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--upstream", required=True, metavar="URL",
                        help="where requests go, e.g. https://api.anthropic.com (the request path is appended)")
    parser.add_argument("--out", required=True, metavar="DIR", help="folder for the snapshot files")
    parser.add_argument("--port", type=int, default=8080, help="port to listen on (default 8080; 0: any free port)")
    parser.add_argument("--host", default="127.0.0.1", help="address to listen on (default 127.0.0.1)")
    parser.add_argument("--no-verdict", action="store_true",
                        help="write snapshots only; skip the per-request diff (no tokenizer runs)")
    parser.add_argument("--header-timeout", type=_seconds, default=30.0, metavar="S",
                        help="close a connection whose request headers take longer (default 30)")
    parser.add_argument("--body-timeout", type=_seconds, default=60.0, metavar="S",
                        help="close a connection that pauses longer while sending a request body (default 60)")
    parser.add_argument("--max-connections", type=positive_int, default=None, metavar="N",
                        help="open client connections; past it a new one gets 503 (default: half the "
                             "process's open-file limit less 96, at most 1024)")


def _seconds(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number of seconds: {text!r}") from None
    if not value > 0:
        raise argparse.ArgumentTypeError(f"must be more than 0 seconds: {text!r}")
    return value


def run(args: argparse.Namespace) -> int:
    require_aiohttp("proxy")
    from ..proxy.server import serve

    def ready(port: int) -> None:
        print(f"fidelity proxy: listening on http://{args.host}:{port} -> {args.upstream}; snapshots in {args.out}",
              flush=True)

    return serve(args.upstream, args.out, host=args.host, port=args.port, judge_requests=not args.no_verdict,
                 ready=ready, header_timeout=args.header_timeout, body_timeout=args.body_timeout,
                 max_connections=args.max_connections)
