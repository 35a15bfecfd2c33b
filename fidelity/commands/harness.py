"""``fidelity harness run|matrix|bisect``: real agent harnesses, release by
release, driven headless through ``fidelity proxy`` against the scripted
upstream; each subagent child judged against its parent (docs/harness.md)."""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

from ._args import positive_int, require_aiohttp

__all__ = ["HELP", "add_arguments", "run"]

HELP = ("Install an agent harness release, drive it headless through the recording proxy against a scripted "
        "upstream that makes it spawn each kind of subagent, and judge every child against its parent: "
        "run one release, build the matrix of the last N releases, or bisect a verdict change.")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    sub = parser.add_subparsers(dest="harness_command", metavar="ACTION", required=True)
    run_p = sub.add_parser("run", help="run one release (NAME@VERSION; VERSION omitted: the newest)")
    run_p.add_argument("target", metavar="NAME@VERSION")
    run_p.add_argument("--out", metavar="DIR", default="harness-runs",
                       help="where the captures go, DIR/NAME-VERSION/KIND/ (default ./harness-runs)")
    mat = sub.add_parser("matrix", help="descriptors x last N releases x providers -> reports/harness-matrix.*")
    mat.add_argument("--releases", type=positive_int, default=3, metavar="N", help="newest N releases each (default 3)")
    mat.add_argument("--harness", action="append", metavar="NAME", help="only these harnesses (repeatable)")
    mat.add_argument("--fixtures", metavar="DIR", help="capture folders (default: the checkout's "
                     "fixtures/harness-matrix)")
    mat.add_argument("--out", metavar="DIR", default="reports", help="where harness-matrix.* go (default reports)")
    mat.add_argument("--no-run", action="store_true", help="rebuild the reports from the captures only")
    bis = sub.add_parser("bisect", help="first release whose verdict differs between --good and --bad")
    bis.add_argument("name", metavar="NAME")
    bis.add_argument("--good", required=True, metavar="V1")
    bis.add_argument("--bad", required=True, metavar="V2")
    bis.add_argument("--out", metavar="DIR", help="keep the captures here (default: a temporary folder)")
    for p in (run_p, mat, bis):
        p.add_argument("--provider", action="append", metavar="P",
                       help="score under these providers only (repeatable; default: every provider of the wire format)")
        p.add_argument("--kind", action="append", metavar="K", help="these subagent kinds only (repeatable)")
        p.add_argument("--timeout", type=float, default=300, metavar="S", help="per harness run (default 300 s)")
        p.add_argument("--debug", action="store_true", default=argparse.SUPPRESS, help="show tracebacks on errors")


def _run_one(args: argparse.Namespace) -> int:
    from ..harness import install, load
    from ..harness.capture import capture_release
    from ..harness.matrix import build_from, table

    name, _, version = args.target.partition("@")
    d = load(name)
    version = version or install.releases(d)[-1]
    start = time.monotonic()
    caps = capture_release(d, version, Path(args.out), kinds=args.kind, timeout=args.timeout)
    rows = build_from(caps, providers=args.provider)["rows"]
    print(table(rows), end="")
    print(f"{d.name}@{version}: {len(caps)} kind(s) in {time.monotonic() - start:.0f} s; captures in "
          f"{Path(args.out) / f'{d.name}-{version}'}", file=sys.stderr)
    return 0


def _matrix(args: argparse.Namespace) -> int:
    from ..harness import install, load, load_all, names
    from ..harness.capture import capture_release, prune
    from ..harness.matrix import DEFAULT_FIXTURES, build, write

    root = Path(args.fixtures) if args.fixtures else DEFAULT_FIXTURES
    chosen = [load(n) for n in (args.harness or names())]
    start = time.monotonic()
    if not args.no_run:
        for d in chosen:
            if d.unsupported:
                print(f"{d.name}: not run ({d.unsupported})", file=sys.stderr)
                continue
            wanted = install.releases(d)[-args.releases:]
            wanted = sorted(set(wanted) | set(d.also), key=install.version_key)
            prune(d, wanted, root)
            for v in wanted:
                t = time.monotonic()
                caps = capture_release(d, v, root, kinds=args.kind, timeout=args.timeout)
                print(f"{d.name}@{v}: " + ", ".join(f"{c.kind} {c.status}" for c in caps)
                      + f" ({time.monotonic() - t:.0f} s)", file=sys.stderr)
    matrix = build(root, load_all(), providers=args.provider)
    for path in write(matrix, Path(args.out)):
        print(path)
    print(f"harness matrix: {len(matrix['rows'])} rows in {time.monotonic() - start:.0f} s", file=sys.stderr)
    return 0


def _bisect(args: argparse.Namespace) -> int:
    from ..harness import first_change, install, load
    from ..harness.capture import capture_release
    from ..harness.matrix import build_from

    d = load(args.name)
    releases = install.releases(d)
    with tempfile.TemporaryDirectory(prefix="fidelity-bisect-") as tmp:
        root = Path(args.out) if args.out else Path(tmp)

        def signature(v: str) -> tuple[tuple[Any, ...], ...]:
            caps = capture_release(d, v, root, kinds=args.kind, timeout=args.timeout)
            rows = build_from(caps, providers=args.provider)["rows"]
            sig = tuple((r["kind"], r["provider_id"], r["verdict"], r.get("cause"), r.get("pointer")) for r in rows)
            print(f"{d.name}@{v}: " + "; ".join(f"{k} {p} {verdict} {c or ''} {ptr or ''}".strip()
                                               for k, p, verdict, c, ptr in sig), file=sys.stderr)
            return sig

        first, judged = first_change(releases, args.good, args.bad, signature)
    if first is None:
        print(f"{d.name}: no verdict change between {args.good} and {args.bad} ({judged} releases judged)")
    else:
        print(f"{d.name}: the verdict first differs in {first} ({judged} releases judged)")
    return 0


def run(args: argparse.Namespace) -> int:
    if not getattr(args, "no_run", False):
        require_aiohttp("harness")
    from ..errors import UnknownName
    from ..harness.judge import PROVIDERS

    for p in args.provider or ():
        if p not in PROVIDERS:
            raise UnknownName("provider", p, list(PROVIDERS))
    action = {"run": _run_one, "matrix": _matrix, "bisect": _bisect}[args.harness_command]
    return action(args)
