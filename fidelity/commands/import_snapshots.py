"""``fidelity import SOURCE OUTDIR``: recorded traffic into request snapshots."""

from __future__ import annotations

import argparse
import sys

from ..capture.importers import KINDS, import_file, write_imported

__all__ = ["HELP", "add_arguments", "run"]

HELP = ("Import recorded requests (HAR 1.2, vcrpy cassette, JSONL request log, DeepSeek Harness "
        "session log) as request snapshots, credentials redacted.")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("source", help="HAR file, vcrpy cassette, JSONL request log or DSH session log")
    parser.add_argument("outdir", help="snapshot folder to write into")
    parser.add_argument("--kind", choices=KINDS, help="importer (guessed from the file when omitted)")


def run(args: argparse.Namespace) -> int:
    imported = import_file(args.source, args.kind)
    paths = write_imported(imported, args.outdir)
    for warning in imported.warnings:
        print(f"warning: {warning}", file=sys.stderr)
    for path in paths:
        print(path)
    print(imported.summary(), file=sys.stderr)
    return 0
