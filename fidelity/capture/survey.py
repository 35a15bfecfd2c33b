"""How well fidelity reads a folder of real recorded traffic: one command, counts.

``python3 -m fidelity.capture.survey FOLDER... [--json] [--failures N]`` imports
every recording under each folder without writing anything and counts sources,
requests, bodies stored as sent, round trips and detections (each defined in
docs/real-traffic.md, "The survey"). Exit status 0 when all agree, 1 otherwise,
2 for a bad argument."""

from __future__ import annotations

import argparse
import json
import sys
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .. import formats, providers
from ..bytediff import first_divergence
from ..errors import FidelityError, InputError

__all__ = ["Survey", "survey", "sources_in", "main"]

#: kinds of the one listing that the importers read
_IMPORTED = ("vcr", "ruby-vcr", "har", "httprr", "jsonl", "dsh")


@dataclass
class Survey:
    """The counts (see the module docstring) and a few examples of each failure."""

    sources: int = 0
    imported: int = 0
    failed: list[tuple[str, str]] = field(default_factory=list)
    requests: int = 0
    skipped: Counter[str] = field(default_factory=Counter)
    unsupported: Counter[str] = field(default_factory=Counter)
    as_sent: int = 0
    not_as_sent: int = 0
    round_trip_ok: int = 0
    round_trip_checked: int = 0
    round_trip_failures: list[str] = field(default_factory=list)
    url_named: int = 0
    detected_as_url: int = 0
    detection_failures: list[str] = field(default_factory=list)
    with_usage: int = 0
    conflicts: int = 0
    #: requests the one rule leaves out of every command's figures, by reason (:mod:`fidelity.traffic.apart`)
    set_apart: Counter[str] = field(default_factory=Counter)

    @property
    def ok(self) -> bool:
        return (self.round_trip_ok == self.round_trip_checked and self.detected_as_url == self.url_named)

    def lines(self) -> list[str]:
        """The report, one fact per line."""
        out = [
            f"sources: {self.sources} ({self.imported} imported, {len(self.failed)} reported with a reason)",
            f"requests: {self.requests} model requests; {sum(self.skipped.values())} other calls skipped"
            + (" (" + ", ".join(f"{r} {n}" for r, n in sorted(self.skipped.items(), key=lambda kv: (-kv[1], kv[0])))
               + ")" if self.skipped else ""),
        ]
        if self.unsupported:
            out.append("unsupported APIs (counted, not rendered): "
                       + ", ".join(f"{d} {n}" for d, n in sorted(self.unsupported.items())))
        out += [
            f"stored as sent: {self.as_sent} bodies ({self.not_as_sent} others: parsed, re-serialised or redacted)",
            f"round trip render(parse(b)) == b: {self.round_trip_ok}/{self.round_trip_checked}"
            + _pct(self.round_trip_ok, self.round_trip_checked),
            f"detection names the URL's provider: {self.detected_as_url}/{self.url_named}"
            + _pct(self.detected_as_url, self.url_named)
            + (f" ({self.conflicts} with conflicting evidence resolved)" if self.conflicts else ""),
            f"usage reported by the response kept: {self.with_usage}/{self.requests}",
        ]
        if self.set_apart:
            out.append("left out of replay, scan and tokens-check figures: " + ", ".join(
                f"{r} {n}" for r, n in sorted(self.set_apart.items(), key=lambda kv: (-kv[1], kv[0]))))
        out += [f"  failed source: {name}: {why}" for name, why in self.failed]
        out += [f"  round trip: {x}" for x in self.round_trip_failures]
        out += [f"  detection: {x}" for x in self.detection_failures]
        return out

    def to_json(self) -> dict[str, Any]:
        return {
            "sources": self.sources, "imported": self.imported,
            "failed": [{"source": n, "reason": r} for n, r in self.failed],
            "requests": self.requests, "skipped": dict(sorted(self.skipped.items())),
            "unsupported": dict(sorted(self.unsupported.items())),
            "stored_as_sent": self.as_sent, "not_stored_as_sent": self.not_as_sent,
            "round_trip": {"ok": self.round_trip_ok, "checked": self.round_trip_checked},
            "detection": {"ok": self.detected_as_url, "url_named": self.url_named, "conflicts": self.conflicts},
            "with_usage": self.with_usage, "set_apart": dict(sorted(self.set_apart.items())),
        }


def _pct(a: int, b: int) -> str:
    return f" ({formats.percent(a / b)})" if b else ""


def sources_in(folder: Path) -> list[Path]:
    """Recordings under ``folder`` that the importers read, in path order (the one listing)."""
    from ..traffic.sources import list_sources

    return [s.path for s in list_sources(folder) if s.kind in _IMPORTED]


def _check(snap: Any, result: Survey, keep: int) -> None:
    from .. import wire
    from ..wire.evidence import detect_request, parse_body

    result.requests += 1
    if snap.usage:
        result.with_usage += 1
    endpoint = providers.from_url(snap.url) if snap.url else None
    try:
        obj = json.loads(snap.body.decode("utf-8", "surrogatepass"))
    except (ValueError, UnicodeDecodeError):
        obj = None
    try:
        found = detect_request(obj, url=snap.url, meta_model=snap.model)
    except InputError as exc:
        if endpoint is not None:
            result.url_named += 1
            if len(result.detection_failures) < keep:
                result.detection_failures.append(f"{snap.source}: {exc.problem}")
        return
    if endpoint is not None:
        result.url_named += 1
        if found.family == endpoint.provider:
            result.detected_as_url += 1
        elif len(result.detection_failures) < keep:
            result.detection_failures.append(f"{snap.source}: URL names {endpoint.provider}, detected {found.family}")
    if found.conflict:
        result.conflicts += 1
    if not found.supported:
        result.unsupported[found.dialect] += 1
        return
    if not snap.body_exact:
        result.not_as_sent += 1
        return
    result.as_sent += 1
    result.round_trip_checked += 1
    dialect = wire.get(found.dialect)
    try:
        again = dialect.render(parse_body(dialect, snap.body, found.model))
    except FidelityError as exc:
        if len(result.round_trip_failures) < keep:
            result.round_trip_failures.append(f"{snap.source}: {found.dialect}: {exc}")
        return
    if again == snap.body:
        result.round_trip_ok += 1
    elif len(result.round_trip_failures) < keep:
        at = first_divergence(again, snap.body)
        result.round_trip_failures.append(f"{snap.source}: {found.dialect}: first differing byte {at}")


def survey(*folders: str | Path, keep: int = 5) -> Survey:
    """Survey every recording under each folder (nothing is written)."""
    from .importers import import_file

    todo: list[tuple[Path, Path]] = []
    for folder in folders:
        root = Path(folder)
        if not root.is_dir():
            raise InputError("no such folder" if not root.exists() else "not a folder", path=root)
        todo += [(root, p) for p in sources_in(root)]
    result = Survey()
    for root, path in todo:
        result.sources += 1
        try:
            imported = import_file(path)
        except FidelityError as exc:
            result.failed.append((str(path.relative_to(root)) if path.is_relative_to(root) else str(path), exc.problem
                                  if isinstance(exc, InputError) else str(exc)))
            continue
        result.imported += 1
        result.skipped.update(imported.reasons)
        unexplained = imported.skipped - sum(imported.reasons.values())
        if unexplained > 0:
            result.skipped["not model requests"] += unexplained
        for snap in imported.snapshots:
            _check(snap, result, keep)
        result.set_apart.update(imported.set_apart)
    return result


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python3 -m fidelity.capture.survey", description=__doc__.splitlines()[0])
    parser.add_argument("folders", nargs="+", metavar="FOLDER", help="folders of recordings (searched recursively)")
    parser.add_argument("--json", action="store_true", help="print the counts as JSON")
    parser.add_argument("--failures", type=int, default=5, help="examples of each failure to list (default 5)")
    args = parser.parse_args(argv)
    try:
        result = survey(*args.folders, keep=max(0, args.failures))
    except InputError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    if args.json:
        sys.stdout.buffer.write(formats.json_doc(result.to_json()))
    else:
        print("\n".join(result.lines()))
    return 0 if result.ok else 1


if __name__ == "__main__":
    sys.exit(main())
