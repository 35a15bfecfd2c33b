"""Recordings the one reader reads (:mod:`fidelity.traffic.sources`) as
snapshots: each exchange holding a generation request becomes one redacted
snapshot, the others are skipped with the one rule's reason, and what the
exchange says about the body's bytes becomes notes, warnings and
``body_exact`` (docs/ci-and-capture.md, "Importing recorded traffic")."""

from __future__ import annotations

import json
from pathlib import Path

from ...traffic.apart import NOT_AS_SENT
from ...traffic.exchange import Exchange, header, iso_text
from ...traffic.sources import Source, entries
from ._base import Imported

__all__ = ["read_recorded", "reserialised_by_vcrpy", "LABELS", "NOT_GENERATION"]

#: the one reader's kind -> the label snapshots name their source with
LABELS = {"vcr": "cassette", "ruby-vcr": "ruby-vcr", "har": "har", "httprr": "httprr", "jsonl": "jsonl"}
#: how the one rule's skip reason starts for a call that is not a model request (the rest is classify's reason)
NOT_GENERATION = "not a generation request: "
_SDK_HINTS = ("openai/python", "anthropic/python", "x-stainless-lang")
_NOUN = {"vcr": "cassette", "ruby-vcr": "cassette", "har": "HAR", "httprr": "trace", "jsonl": "log"}
_PARSED_NOTE = {
    "jsonl": "the body was logged as a JSON object: these are the logger's bytes, not necessarily the client's",
}
_DEFAULT_PARSED = ("the cassette stores parsed_body (the recorder's parsed JSON, keys re-ordered), "
                   "not the bytes sent: the body is its compact serialisation")
_VCRPY = ("a vcrpy cassette stores each body after vcrpy's filters and any before_record_request hook; "
          "a hook that rewrote a body cannot be detected")


def reserialised_by_vcrpy(body: bytes) -> bool:
    """True when ``body`` is JSON written with ``json.dumps`` defaults and
    differs from its compact form, i.e. it has vcrpy's re-dump spacing."""
    try:
        obj = json.loads(body.decode("utf-8"))
    except (UnicodeDecodeError, ValueError):
        return False
    spaced = json.dumps(obj).encode("utf-8")
    compact = json.dumps(obj, separators=(",", ":")).encode("utf-8")
    return body == spaced and spaced != compact


def read_recorded(path: str | Path, kind: str) -> Imported:
    """Every request of one recording of ``kind`` (``vcr``, ``ruby-vcr``,
    ``har`` or ``httprr``), in recorded order."""
    out = Imported(source=f"{LABELS[kind]}:{Path(path).name}")
    if kind == "vcr":
        out.warnings.append(_VCRPY)
    for ex in entries(Source(kind, Path(path))):
        add(out, ex, kind)
    if kind == "har" and not out.snapshots:
        out.warnings.append("no model requests found (entries with a JSON body holding messages/contents/input)")
    return out


def add(out: Imported, ex: Exchange, kind: str, parent: tuple[str | None, ...] = (),
        notes: list[str] | None = None) -> str | None:
    """Append the snapshot of one exchange to ``out``, or count it as
    skipped; the snapshot's name, or ``None`` when skipped or set apart.
    ``parent``: ``(name,)`` to name the snapshot's parent; ``notes``: more notes."""
    skip = ex.skip or ""
    if ex.body and ex.set_apart is not None and not ex.set_apart.startswith(NOT_GENERATION):
        out.set_apart[ex.set_apart] += 1
    if not ex.body or skip.startswith(NOT_GENERATION):
        out.skip(skip.removeprefix(NOT_GENERATION) or "no request body")
        return None
    where = ex.where + "/request" if kind in ("vcr", "ruby-vcr") else ex.where
    found, warnings, exact = _notes(ex, kind, where)
    snap = out.add(method=ex.method, url=ex.url or "", headers=ex.headers, body=ex.body, where=where,
                   notes=found + (notes or []), body_exact=exact, time=iso_text(ex.time),
                   usage=dict(ex.usage) if ex.usage is not None else None,
                   has_parent=bool(parent), parent=parent[0] if parent else None)
    if snap is None:  # set apart (a malformed URL): the warnings say why
        return None
    out.warnings.extend(warnings)
    return snap.filename


def _notes(ex: Exchange, kind: str, where: str) -> tuple[list[str], list[str], bool]:
    """The snapshot's notes about its body, the warnings to show, and whether
    the body holds the bytes as sent (``body_exact``)."""
    notes: list[str] = []
    warnings: list[str] = []
    inexact: list[str] = []  # the notes that say the bytes are not the ones sent
    if ex.decoded:
        notes.append(f"the request body was sent with Content-Encoding {ex.decoded}; the snapshot holds it decoded")
    if ex.reserialised:
        inexact.append(_PARSED_NOTE.get(kind, _DEFAULT_PARSED))
    length = header(ex.headers, "content-length")
    if ex.skip == NOT_AS_SENT and length is not None:
        inexact.append(f"Content-Length says {int(length)} bytes but the {_NOUN[kind]} body is {len(ex.body)}: "
                       f"the {_NOUN[kind]} does not hold the exact body bytes")
    size = ex.recorded_size
    if size is not None and size != len(ex.body) and not ex.decoded:
        inexact.append(f"HAR bodySize is {size} bytes but postData.text is {len(ex.body)}: the recorder decoded or "
                       "re-encoded the body, so these are not the exact bytes sent")
    length_ok = length is not None and length.strip().isdigit() and int(length) == len(ex.body)
    # a recorded Content-Length equal to the spaced body's length proves the client
    # sent it spaced (openai 1.x over httpx < 0.28 does)
    if kind == "vcr" and not ex.reserialised and not length_ok and reserialised_by_vcrpy(ex.body):
        hints = " ".join(f"{k}:{v}" for k, v in ex.headers).lower()
        if any(h in hints for h in _SDK_HINTS):
            inexact.append("the body is spaced as json.dumps writes it, but the SDK that sent it writes compact "
                           "JSON: vcrpy re-serialised it (filter_post_data_parameters); the cassette does not "
                           "hold the exact body bytes")
        else:
            warnings.append(f"{where}: the body is spaced as json.dumps writes it; if the client sent compact JSON, "
                            "vcrpy re-serialised it (filter_post_data_parameters) and the bytes are not exact")
    notes += inexact
    warnings += [f"{where}: {n}" for n in notes if "Content-Encoding" not in n and "logger's bytes" not in n]
    return notes, warnings, not inexact
