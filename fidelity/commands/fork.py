"""``fidelity fork PARENT --variant V --directive TEXT``: write the reference
child request body that a composition variant makes from a captured parent
body, byte-exact for the provider."""

from __future__ import annotations

import argparse
import dataclasses
import sys

from .. import compose, jsonio, wire
from ..errors import ForkUnavailable, InputError

__all__ = ["HELP", "add_arguments", "run"]

HELP = ("Make the reference child request of a composition variant from a captured parent request body "
        "(any supported dialect), byte-exact for that provider.")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("parent", help="the parent's request body (JSON) as sent, or a request snapshot, "
                        "optionally with the assistant reply appended to its history")
    parser.add_argument("--variant", required=True, help="composition variant (see docs/report.md): "
                        + ", ".join(compose.variant_names()))
    parser.add_argument("--directive", required=True, help="the child's task")
    parser.add_argument("--provider", help="wire dialect of the body (default: detected from the snapshot's URL "
                        "and metadata, then the body)")
    parser.add_argument("--model", help="the parent's model when neither the body, the snapshot metadata nor "
                        "the URL names it")
    parser.add_argument("--alt-model", help="target model of the route-change variant")
    parser.add_argument("--out", metavar="FILE", help="write the body here (default: stdout)")


def run(args: argparse.Namespace) -> int:
    from ..capture import snapshot
    from ..wire.evidence import detect_request, parse_body

    body, meta = snapshot.load_body(args.parent)  # a raw body or a snapshot file
    obj = jsonio.loads(body, path=args.parent)
    found = detect_request(obj, url=getattr(meta, "url", None), meta_dialect=getattr(meta, "provider", None),
                           meta_model=getattr(meta, "model", None), override=args.provider, path=args.parent)
    if not found.supported:
        raise InputError(f"fidelity does not render this API ({found.dialect}); pass --provider", path=args.parent)
    dialect = wire.get(found.dialect)
    try:
        parent = parse_body(dialect, body, args.model or found.model)
    except InputError as exc:
        raise exc.at(args.parent) from None
    if args.model and parent.route.model != args.model:
        parent = dataclasses.replace(parent, route=dataclasses.replace(parent.route, model=args.model))
    # The system prompt as blocks, as the report's fixtures hold it, when that
    # renders to the same bytes: one builder, one child (compose.system_from_messages).
    lifted = compose.system_from_messages(parent)
    if lifted is not parent and dialect.render(lifted) == dialect.render(parent):
        parent = lifted
    variant = compose.get_variant(args.variant)
    context = {"model": parent.route.model, "alt_model": args.alt_model or parent.route.model}
    try:
        child = variant.apply(parent, args.directive, context)
        data = dialect.render(child)
    except InputError as exc:  # the parent lacks what the variant needs: name the file
        raise exc.at(args.parent) from None
    except ForkUnavailable as exc:
        raise InputError(str(exc), path=args.parent) from None
    if args.out:
        jsonio.atomic_write(args.out, data)
        print(args.out)
    else:
        sys.stdout.buffer.write(data)
    return 0
