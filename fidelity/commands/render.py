"""``fidelity render [--provider P] [--profile NAME] REQUEST.json``: the exact wire
body bytes of a canonical request (:mod:`fidelity.canonical`) on stdout, nothing added."""

from __future__ import annotations

import argparse
import dataclasses
import sys
from typing import Any

from .. import providers, wire
from ..canonical import FORMAT, request_from_obj
from ..errors import InputError, UnknownName
from ..jsonio import load
from ..wire.evidence import detect_request

__all__ = ["HELP", "EXAMPLE", "add_arguments", "run", "dialect_for"]

#: the canonical request shipped with the source tree (the help names it)
EXAMPLE = "fixtures/request.example.json"

HELP = (f"Write the exact request body a provider SDK would send for a canonical request: a provider-neutral "
        f"JSON file that starts {{\"fidelity\": \"{FORMAT}\", \"route\": {{\"provider\": ..., \"model\": ...}}, ...}} "
        f"(example: {EXAMPLE} in the source tree; the format is documented in fidelity/canonical.py). "
        "Not a provider wire body: diff and fork read those.")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--provider", "-p", metavar="P",
                        help="wire dialect name: " + ", ".join(wire.names())
                        + " (default: the dialect the request's route.provider speaks, when it speaks one)")
    from ..wire.profiles import profile_names

    parser.add_argument("--profile", metavar="NAME",
                        help="client profile: " + ", ".join(profile_names()) + " (default: the current SDK)")
    parser.add_argument("--model", help="model for a request whose route names none")
    parser.add_argument("request", metavar="REQUEST.json",
                        help=f"canonical request JSON file (\"fidelity\": \"{FORMAT}\"; example: {EXAMPLE})")


def _refuse_wire_body(obj: Any, path: str) -> None:
    """Refuse a provider wire body handed to render, naming the commands that take one."""
    if not isinstance(obj, dict) or "fidelity" in obj:
        return
    try:
        dialect = detect_request(obj).dialect
    except InputError:
        return
    raise InputError(f"this is a provider wire body (it looks like {dialect}), not a canonical request; render takes "
                      f"a canonical request (\"fidelity\": \"{FORMAT}\", example: {EXAMPLE}); to diff or fork this body as it "
                      f"is, use `fidelity diff` or `fidelity fork --provider {dialect}`", path=path)


def dialect_for(route_provider: str, *, path: str | None = None) -> str:
    """The one dialect a route's provider speaks (its own name's, else its routes' only
    one); :class:`InputError` saying why when there is none or more than one."""
    name = route_provider.strip().lower()
    if name in wire.names():
        return name
    try:
        spoken = sorted({r.dialect for r in providers.get(name).routes})
    except UnknownName:
        spoken = []
    if len(spoken) == 1:
        return spoken[0]
    why = (f"route.provider {route_provider!r} speaks {' and '.join(spoken)}" if spoken
           else f"route.provider {route_provider!r} names no known provider")
    raise InputError(f"cannot tell which dialect to render: {why}; pass --provider (known: "
                     f"{', '.join(wire.names())})", path=path, pointer="/route/provider")


def run(args: argparse.Namespace) -> int:
    given = wire.get(args.provider) if args.provider else None  # UnknownName -> one line, exit 2
    obj = load(args.request)
    _refuse_wire_body(obj, args.request)
    request = request_from_obj(obj, path=args.request)
    dialect = given or wire.get(dialect_for(request.route.provider, path=args.request))
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
