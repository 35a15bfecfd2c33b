"""``python -m fidelity.importers SOURCE OUTDIR [--kind KIND]``."""

from __future__ import annotations

import argparse
import sys

from ..errors import FidelityError
from . import KINDS, import_file, write_imported


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m fidelity.importers",
                                     description="Import recorded requests as fidelity snapshots.")
    parser.add_argument("source", help="HAR file, vcrpy cassette, JSONL request log or DSH session log")
    parser.add_argument("outdir", help="snapshot folder to write into")
    parser.add_argument("--kind", choices=KINDS, help="importer (guessed from the file when omitted)")
    args = parser.parse_args(argv)
    try:
        imported = import_file(args.source, args.kind)
        paths = write_imported(imported, args.outdir)
    except FidelityError as exc:
        print(f"fidelity import: error: {exc}", file=sys.stderr)
        return 2
    for warning in imported.warnings:
        print(f"warning: {warning}", file=sys.stderr)
    for path in paths:
        print(path)
    print(imported.summary(), file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
