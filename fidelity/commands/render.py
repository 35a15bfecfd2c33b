"""``fidelity render --provider P [--profile NAME] REQUEST.json``: the exact wire body bytes.

Reads a canonical request (see :mod:`fidelity.canonical`), renders it with the
named dialect and writes the body to stdout with nothing added (no trailing
newline), so that ``fidelity render ... > body.json`` is byte-identical to
what the official SDK would send. ``--profile`` names the client whose bytes
to reproduce (:mod:`fidelity.wire.profiles`: ``openai-python<3``,
``anthropic-stream``, ``gemini-rest``...; default: the dialect's current SDK).
``--model`` fills in a request whose route names no model.
"""

from __future__ import annotations

import argparse
import dataclasses
import sys

from .. import wire
from ..canonical import load_request
from ..errors import InputError

__all__ = ["HELP", "add_arguments", "run"]

HELP = "Write the exact request body a provider SDK would send for a canonical request"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--provider", "-p", required=True, metavar="P",
                        help="wire dialect name: " + ", ".join(wire.names()))
    from ..wire.profiles import profile_names

    parser.add_argument("--profile", metavar="NAME",
                        help="client profile: " + ", ".join(profile_names()) + " (default: the current SDK)")
    parser.add_argument("--model", help="model for a request whose route names none")
    parser.add_argument("request", metavar="REQUEST.json", help="canonical request JSON file")


def run(args: argparse.Namespace) -> int:
    dialect = wire.get(args.provider)  # UnknownName -> one line, exit 2
    request = load_request(args.request)
    if args.model and not request.route.model:
        request = dataclasses.replace(request, route=dataclasses.replace(request.route, model=args.model))
    try:
        if args.profile:
            from ..wire.profiles import profile

            request = dataclasses.replace(request, layout=profile(args.profile, dialect.name))
        body = dialect.render(request)
    except InputError as exc:  # a value the SDK cannot send (lone surrogate, NaN): name the file
        raise exc.at(args.request) from None
    out = sys.stdout.buffer if hasattr(sys.stdout, "buffer") else None
    if out is None:  # pragma: no cover - text-only stdout (captured by some runners)
        sys.stdout.write(body.decode("utf-8"))
    else:
        out.write(body)
        out.flush()
    return 0
