"""Turn recorded traffic into request snapshots.

Each importer (``har``, ``cassette``, ``jsonl``, ``dsh``; any gzipped) reads
one kind of recording and returns an :class:`Imported`: redacted snapshots in
request order, warnings saying what the source could not keep, and the
non-generation requests skipped by reason. ``python -m fidelity.importers
SOURCE OUTDIR [--kind KIND]``, :func:`import_file` and :func:`write_imported`
write them. Each format's rules: docs/ci-and-capture.md, "Importing recorded traffic"."""

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
