"""Turn recorded traffic into request snapshots: each importer returns an
:class:`Imported` (redacted snapshots in request order, warnings, skips by
reason). Recordings the one reader reads go through :mod:`.recorded`; plain
JSONL logs (:mod:`.jsonl`) and DeepSeek Harness sessions (:mod:`.dsh`) have
their own. ``python -m fidelity.capture.importers SOURCE OUTDIR``; the rules:
docs/ci-and-capture.md, "Importing recorded traffic"."""

from __future__ import annotations

from collections.abc import Callable
from functools import partial
from pathlib import Path

from ..._registry import Registry
from ...errors import InputError, UnknownName
from ...gzipped import gunzip_head
from ...jsonio import read_bytes
from ._base import Imported, write_imported

__all__ = ["Imported", "import_file", "write_imported", "KINDS", "guess_kind"]


def _recorded(kind: str, path: str | Path) -> Imported:
    from .recorded import read_recorded

    return read_recorded(path, kind)


#: importer name -> its reader (the vcrpy importer is named ``cassette``)
_READERS: Registry[Callable[[str | Path], Imported]] = Registry("importer")
for _kind, _source_kind in (("har", "har"), ("cassette", "vcr"), ("ruby-vcr", "ruby-vcr"), ("httprr", "httprr")):
    _READERS.add(_kind, partial(_recorded, _source_kind))
for _kind, _ref in (("jsonl", "jsonl:read_jsonl"), ("dsh", "dsh:read_dsh")):
    _READERS.add(_kind, f"{__name__}.{_ref}", lazy=True)
KINDS = tuple(_READERS.names())


def guess_kind(path: str | Path) -> str:
    """The importer for ``path`` (:func:`fidelity.traffic.sources.kind_of`, then
    a ``.json`` file with a ``version`` member near its start as a cassette)."""
    from ...traffic.sources import kind_of

    p = Path(path)
    kind = kind_of(p)
    if kind in ("har", "ruby-vcr", "httprr", "jsonl", "dsh"):
        return kind
    if kind == "vcr":
        return "cassette"
    name = p.name.lower().removesuffix(".gz")
    if name.endswith(".json"):
        head = (gunzip_head(p, 4096) if p.name.lower().endswith(".gz") else read_bytes(p)[:4096]).lstrip()
        if b'"version"' in head[:100]:
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
