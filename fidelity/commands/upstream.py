"""``fidelity upstream --script FILE --port N``: a scripted fake provider
(OpenAI Chat/Responses, Anthropic Messages, Gemini) for driving harnesses."""

from __future__ import annotations

import argparse
import asyncio
import signal

from ._args import require_aiohttp

__all__ = ["HELP", "add_arguments", "run"]

HELP = ("Scripted fake provider (OpenAI Chat/Responses, Anthropic Messages, Gemini) answering from a script, "
        "with usage figures from fidelity's cache models.")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--script", required=True, metavar="FILE", help="TOML or JSON script (see docs/proxy.md)")
    parser.add_argument("--port", type=int, default=8090, help="port to listen on (default 8090; 0: any free port)")
    parser.add_argument("--host", default="127.0.0.1", help="address to listen on (default 127.0.0.1)")
    parser.add_argument("--usage", choices=("predict", "zero"), default="predict",
                        help="usage figures: fidelity's cache-model prediction (default) or zero cached")
    parser.add_argument("--endpoint", metavar="URL",
                        help="whose cache rules the figures follow (default: each provider's own API)")
    parser.add_argument("--save", metavar="DIR", help="also write each received body to DIR/NNNN.body")


def run(args: argparse.Namespace) -> int:
    require_aiohttp("upstream")
    from ..proxy.script import load_script
    from ..proxy.upstream import ScriptedUpstream

    script = load_script(args.script)
    server = ScriptedUpstream(script, endpoint=args.endpoint, usage=args.usage, save=args.save)

    async def main() -> int:
        stop = asyncio.Event()
        loop = asyncio.get_running_loop()
        for sig in (signal.SIGINT, signal.SIGTERM):
            loop.add_signal_handler(sig, stop.set)
        port = await server.start(args.host, args.port)
        print(f"fidelity upstream: listening on http://{args.host}:{port} ({len(script.rules)} rules from "
              f"{args.script})", flush=True)
        try:
            await stop.wait()
        finally:
            await server.close()
        return 0

    return asyncio.run(main())
