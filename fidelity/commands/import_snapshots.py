"""``fidelity import SOURCE OUTDIR``: recorded traffic into request snapshots."""

from __future__ import annotations

import argparse
import sys
from typing import Any

from .. import gzipped
from ..capture.importers import KINDS, import_file, write_imported
from ._args import positive_int

__all__ = ["HELP", "add_arguments", "run", "add_decompress_arguments", "decompress_limits"]

HELP = ("Import recorded requests (HAR 1.2, vcrpy or Ruby VCR cassette, httprr trace, JSONL request or "
        "claude-trace log, DeepSeek Harness session log) as request snapshots, credentials redacted.")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("source", help="HAR file, vcrpy or Ruby VCR cassette, httprr trace, JSONL log or DSH session log")
    parser.add_argument("outdir", help="snapshot folder to write into")
    parser.add_argument("--kind", choices=KINDS, help="importer (guessed from the file when omitted)")
    add_decompress_arguments(parser)


def add_decompress_arguments(parser: argparse.ArgumentParser) -> None:
    """``--max-decompressed`` and ``--max-gzip-ratio``: the limits of
    :mod:`fidelity.gzipped` for a ``.gz`` input (``import`` and ``scan``)."""
    parser.add_argument("--max-decompressed", type=_size, metavar="SIZE",
                        help=f"most bytes a .gz input may decompress to (default {gzipped.MAX_DECOMPRESSED >> 30}G; "
                             "e.g. 512M, 8G)")
    parser.add_argument("--max-gzip-ratio", type=positive_int, metavar="N",
                        help=f"most bytes out per compressed byte of a .gz input, judged past "
                             f"{gzipped.RATIO_FLOOR >> 20} MiB out (default {gzipped.MAX_RATIO:,}; a gzip bomb nears 1,030)")


def decompress_limits(args: argparse.Namespace) -> Any:
    """The context in which a command reads its inputs, with the limits its
    arguments set."""
    return gzipped.limits(getattr(args, "max_decompressed", None), getattr(args, "max_gzip_ratio", None))


def _size(text: str) -> int:
    try:
        return gzipped.parse_size(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def run(args: argparse.Namespace) -> int:
    with decompress_limits(args):
        imported = import_file(args.source, args.kind)
    paths = write_imported(imported, args.outdir)
    for warning in imported.warnings:
        print(f"warning: {warning}", file=sys.stderr)
    for path in paths:
        print(path)
    print(imported.summary(), file=sys.stderr)
    return 0
