"""Turn recorded traffic into request snapshots.

Each importer reads one kind of recording and returns an :class:`Imported`:
redacted :class:`~fidelity.capture.snapshot.Snapshot` objects in request order plus
warnings that say what the source could not keep (a cassette that re-encoded
the body, a HAR entry whose body size disagrees with its text...).

======================  ======================================================
``har``                 HAR 1.2 (browser devtools, mitmproxy ``savehar``)
``cassette``            vcrpy cassettes (YAML or JSON serializer; ``body`` or
                        pydantic-ai's ``parsed_body``)
``jsonl``               JSON-lines request logs (raw bodies, envelopes, and
                        claude-trace ``{"request", "response"}`` lines)
``dsh``                 DeepSeek Harness session logs (rebuilt requests)
======================  ======================================================

Any of them may be gzipped (``.yaml.gz``, ``.har.gz``, ``.jsonl.gz``).
Requests that are not model generation requests (embeddings, uploads,
telemetry...) are skipped and counted by reason (:mod:`fidelity.capture.classify`);
each snapshot keeps the usage its response reported (:mod:`fidelity.traffic.usage`).

``python -m fidelity.importers SOURCE OUTDIR [--kind KIND]`` writes the
snapshots into ``OUTDIR``; :func:`import_file` and :func:`write_imported`
do the same from Python.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from ..._registry import Registry
from ...errors import InputError, UnknownName
from ...gzipped import gunzip_head
from ...jsonio import read_bytes
from ._base import Imported, write_imported

__all__ = ["Imported", "import_file", "write_imported", "KINDS", "guess_kind"]

#: importer name -> its reader, imported when first used
_READERS: Registry[Callable[[str | Path], Imported]] = Registry("importer")
for _kind, _ref in (("har", "har:read_har"), ("cassette", "cassette:read_cassette"),
                    ("jsonl", "jsonl:read_jsonl"), ("dsh", "dsh:read_dsh")):
    _READERS.add(_kind, f"{__name__}.{_ref}", lazy=True)
KINDS = tuple(_READERS.names())


def guess_kind(path: str | Path) -> str:
    """The importer for ``path``, from its name and first bytes."""
    p = Path(path)
    name = p.name.lower()
    if name.endswith(".gz"):
        name = name[:-3]
    if name.endswith(".har"):
        return "har"
    if name.endswith((".yaml", ".yml")):
        return "cassette"
    head = (gunzip_head(p, 4096) if p.name.lower().endswith(".gz") else read_bytes(p)[:4096]).lstrip()
    if name.endswith(".jsonl"):
        first = head.split(b"\n", 1)[0]
        if b'"parentSession"' in first or (b'"type":"session"' in first.replace(b" ", b"")):
            return "dsh"
        return "jsonl"
    if name.endswith(".json"):
        if b'"log"' in head[:200]:
            return "har"
        if b'"interactions"' in head or b'"version"' in head[:100]:
            return "cassette"
    raise InputError("cannot tell what kind of recording this is; pass --kind (" + ", ".join(KINDS) + ")", path=p)


def import_file(path: str | Path, kind: str | None = None) -> Imported:
    """Read one recording into snapshots (nothing is written)."""
    kind = kind or guess_kind(path)
    try:
        reader = _READERS.get(kind)
    except UnknownName as exc:
        raise InputError(str(exc), path=path) from None
    return reader(path)
