"""Request snapshots: one file per request, exact body bytes plus metadata.

A snapshot file (``NNNN-<provider>-<model>.snapshot``) is one line of compact
JSON metadata starting ``{"fidelity_snapshot":1``, then exactly
``body_length`` bytes of the body as sent (one trailing ``\\n`` tolerated).
The metadata members and their order: docs/ci-and-capture.md, "Request snapshots"."""

from __future__ import annotations

import hashlib
import re
import threading
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, NamedTuple

from ..errors import InputError
from ..jsonio import atomic_write, read_bytes
from ..jsonio import loads as _jsonio_loads
from ..wire.evidence import describe_bytes

__all__ = [
    "FORMAT_VERSION",
    "SUFFIX",
    "Snapshot",
    "dumps",
    "loads",
    "read",
    "write",
    "load_body",
    "is_snapshot",
    "iter_folder",
    "pairs_in_folder",
    "Loaded",
    "SnapshotWriter",
    "describe",
    "header_matters",
    "utf8_text",
    "from_request",
]

FORMAT_VERSION = 1
SUFFIX = ".snapshot"
_MAGIC = b'{"fidelity_snapshot":'
_UNSET: Any = object()


@dataclass(frozen=True)
class Snapshot:
    """One captured request. ``body`` is the exact bytes (see ``body_exact``)."""

    body: bytes
    seq: int = 1
    provider: str | None = None
    family: str | None = None
    model: str | None = None
    method: str = "POST"
    url: str | None = None
    headers: tuple[tuple[str, str], ...] = ()
    body_exact: bool = True
    redacted: tuple[str, ...] = ()
    notes: tuple[str, ...] = ()
    source: str | None = None
    #: file name of the parent request; ``_UNSET`` (absent) means "the
    #: previous request", ``None`` a root that pairs with nothing
    parent: Any = field(default=_UNSET)
    #: request time (ISO 8601 UTC) and reported usage; ``_UNSET``: not written
    time: Any = field(default=_UNSET)
    usage: Any = field(default=_UNSET)

    def metadata(self) -> dict[str, Any]:
        """The header line's members, in the documented order."""
        meta: dict[str, Any] = {
            "fidelity_snapshot": FORMAT_VERSION,
            "seq": self.seq,
            "provider": self.provider,
            "family": self.family,
            "model": self.model,
            "method": self.method,
            "url": self.url,
            "headers": dict(self.headers),
            "body_length": len(self.body),
            "body_sha256": hashlib.sha256(self.body).hexdigest(),
            "body_exact": self.body_exact,
            "redacted": list(self.redacted),
            "notes": list(self.notes),
            "source": self.source,
        }
        if self.time is not _UNSET:
            meta["time"] = self.time
        if self.usage is not _UNSET:
            meta["usage"] = self.usage
        if self.parent is not _UNSET:
            meta["parent"] = self.parent
        return meta

    @property
    def filename(self) -> str:
        """``0003-anthropic-messages-claude-sonnet-4-5.snapshot``."""
        parts = [f"{self.seq:04d}", self.provider or self.family or "request"]
        if self.model:
            parts.append(self.model)
        stem = re.sub(r"[^A-Za-z0-9._-]+", "_", "-".join(parts))[:120]
        return stem + SUFFIX


def dumps(snap: Snapshot, response: dict[str, Any] | None = None) -> bytes:
    """The file bytes: one metadata line (with the proxy's ``response``
    member last when given), ``\\n``, the body."""
    import orjson  # on demand: reading a plain JSON body (fidelity diff) does not need it

    meta = snap.metadata()
    if response is not None:
        meta["response"] = response
    return orjson.dumps(meta) + b"\n" + snap.body


def is_snapshot(data: bytes) -> bool:
    """True when ``data`` starts like a snapshot file."""
    return data.startswith(_MAGIC)


def loads(data: bytes, *, path: str | Path | None = None) -> Snapshot:
    """Parse snapshot file bytes; :class:`InputError` names what is wrong."""
    if not is_snapshot(data):
        raise InputError('not a fidelity snapshot (expected a first line starting {"fidelity_snapshot":)', path=path)
    newline = data.find(b"\n")
    if newline < 0:
        raise InputError("snapshot has no body (no newline after the metadata line)", path=path)
    try:
        meta = _jsonio_loads(data[:newline], path=path, line=1)
    except InputError as exc:
        raise InputError(f"snapshot metadata line: {exc.problem}", path=path, line=1, pointer=exc.pointer) from None
    if not isinstance(meta, dict):
        raise InputError("snapshot metadata line is not a JSON object", path=path, line=1)
    version = meta.get("fidelity_snapshot")
    if version != FORMAT_VERSION:
        raise InputError(f"unsupported snapshot format version {version!r} (this fidelity reads {FORMAT_VERSION})", path=path, line=1)
    body = data[newline + 1 :]
    length = meta.get("body_length")
    if not isinstance(length, int) or length < 0:
        raise InputError("snapshot metadata lacks a valid body_length", path=path, line=1)
    if len(body) == length + 1 and body.endswith(b"\n"):
        body = body[:-1]  # an editor added a final newline
    if len(body) != length:
        raise InputError(f"snapshot body is {len(body)} bytes, metadata says {length} (truncated or edited?)", path=path)
    headers = meta.get("headers") or {}
    if not isinstance(headers, dict):
        raise InputError("snapshot headers must be a JSON object", path=path, line=1)
    seq, parent = _seq_parent(meta, path)
    for key in ("provider", "family", "model", "method", "url", "source"):
        if meta.get(key) is not None and not isinstance(meta[key], str):
            raise InputError(f"snapshot {key} must be a string or null", path=path, line=1, pointer=f"/{key}")
    for key in ("redacted", "notes"):
        if meta.get(key) is not None and not isinstance(meta[key], list):
            raise InputError(f"snapshot {key} must be a list", path=path, line=1, pointer=f"/{key}")
    if meta.get("time") is not None and not isinstance(meta["time"], str):
        raise InputError("snapshot time must be an ISO 8601 string or null", path=path, line=1, pointer="/time")
    if meta.get("usage") is not None and not isinstance(meta["usage"], dict):
        raise InputError("snapshot usage must be an object or null", path=path, line=1, pointer="/usage")
    digest = meta.get("body_sha256")
    if isinstance(digest, str) and digest != hashlib.sha256(body).hexdigest():
        raise InputError("snapshot body does not match its body_sha256 (edited after capture?)", path=path)
    return Snapshot(
        body=body,
        seq=seq,
        provider=meta.get("provider"),
        family=meta.get("family"),
        model=meta.get("model"),
        method=str(meta.get("method") or "POST"),
        url=meta.get("url"),
        headers=tuple((str(k), str(v)) for k, v in headers.items()),
        body_exact=bool(meta.get("body_exact", True)),
        redacted=tuple(str(x) for x in meta.get("redacted") or ()),
        notes=tuple(str(x) for x in meta.get("notes") or ()),
        source=meta.get("source"),
        parent=parent,
        time=meta["time"] if "time" in meta else _UNSET,
        usage=meta["usage"] if "usage" in meta else _UNSET,
    )


def read(path: str | Path) -> Snapshot:
    """Read one snapshot file."""
    return loads(read_bytes(path), path=path)


def write(folder: str | Path, snap: Snapshot, *, name: str | None = None, redactor: Any = None,
          response: dict[str, Any] | None = None) -> Path:
    """Write ``snap`` (and the proxy's ``response``) atomically into ``folder``;
    with a ``redactor``, refuse bytes that still hold a secret it knows."""
    path = Path(folder) / (name or snap.filename)
    data = dumps(snap, response)
    if redactor is not None:
        from .redact import ensure_clean

        data = ensure_clean(data, redactor, what=f"snapshot {snap.filename}")
    atomic_write(path, data)
    return path


def load_body(path: str | Path) -> tuple[bytes, Snapshot | None]:
    """The request body in ``path`` and its :class:`Snapshot` if it is one
    (a raw JSON body file is returned byte for byte, with ``None``)."""
    data = read_bytes(path)
    if is_snapshot(data):
        snap = loads(data, path=path)
        return snap.body, snap
    if not data.strip():
        raise InputError("empty file, expected a JSON request body or a snapshot", path=path)
    return data, None


def utf8_text(text: str) -> str:
    """``text`` as it can be written in UTF-8: a file name's undecodable
    bytes (``surrogateescape``) as ``\\xff`` escapes, any other lone
    surrogate as U+FFFD."""
    try:
        text.encode("utf-8")
        return text
    except UnicodeEncodeError:
        pass
    try:
        return text.encode("utf-8", "surrogateescape").decode("utf-8", "backslashreplace")
    except UnicodeEncodeError:
        return text.encode("utf-8", "surrogatepass").decode("utf-8", "replace")


# -- folders ---------------------------------------------------------------------


@dataclass(frozen=True)
class _Entry:
    path: Path
    seq: int | None
    parent: Any


def _natural(name: str) -> tuple[Any, ...]:
    return tuple(int(t) if t.isdigit() else t for t in re.split(r"(\d+)", name))


def _head(path: Path) -> tuple[int, Any]:
    """``(seq, parent)`` from a snapshot's metadata line, without reading the body."""
    try:
        with open(path, "rb") as fh:
            line = fh.readline(1 << 20)
    except OSError:
        read_bytes(path)  # raises the one-line InputError for this path
        raise
    try:
        meta = _jsonio_loads(line, path=path, line=1) if is_snapshot(line) and line.endswith(b"\n") else None
    except InputError:
        meta = None
    if not isinstance(meta, dict):  # the full reader says what is wrong
        s = read(path)
        return s.seq, s.parent
    return _seq_parent(meta, path)


def _seq_parent(meta: dict[str, Any], path: str | Path | None) -> tuple[int, Any]:
    """A metadata line's ``seq`` and ``parent`` (``_UNSET`` when absent), checked."""
    seq = meta.get("seq", 1)
    if not isinstance(seq, int) or isinstance(seq, bool):
        raise InputError("snapshot seq must be an integer", path=path, line=1)
    parent = meta["parent"] if "parent" in meta else _UNSET
    if parent is not _UNSET and parent is not None and (not isinstance(parent, (str, int)) or isinstance(parent, bool)):
        raise InputError("snapshot parent must be a file name, a seq number or null", path=path, line=1,
                         pointer="/parent")
    return seq, parent


def _entries(folder: Path) -> list[_Entry]:
    if not folder.is_dir():
        raise InputError("no such folder" if not folder.exists() else "not a folder", path=folder)
    snaps: list[_Entry] = []
    raws: list[_Entry] = []
    for p in folder.iterdir():
        if p.name.startswith(".") or not p.is_file():
            continue
        if p.suffix == SUFFIX:
            seq, parent = _head(p)
            snaps.append(_Entry(p, seq, parent))
        elif p.suffix == ".json":
            raws.append(_Entry(p, None, _UNSET))
    snaps.sort(key=lambda e: (e.seq, _natural(e.path.name)))
    raws.sort(key=lambda e: _natural(e.path.name))
    return snaps + raws


def iter_folder(folder: str | Path) -> list[Path]:
    """Request files of a folder in order: snapshots by ``seq``, then raw
    ``*.json`` bodies in natural name order (``2.json`` before ``10.json``)."""
    return [e.path for e in _entries(Path(folder))]


#: request bodies :func:`pairs_in_folder` keeps in memory at once
_KEEP_LOADED = 4


def count_pairs(folder: str | Path) -> int:
    """How many pairs :func:`pairs_in_folder` will yield (metadata lines only)."""
    entries = _entries(Path(folder))
    return sum(1 for i, e in enumerate(entries) if (e.parent is _UNSET and i > 0) or e.parent not in (_UNSET, None))


class Loaded(NamedTuple):
    """One request file of a folder: its path, body bytes and metadata
    (``None`` for a raw JSON body file)."""

    path: Path
    body: bytes
    meta: Snapshot | None


def pairs_in_folder(folder: str | Path) -> Iterator[tuple[Loaded, Loaded]]:
    """Yield ``(parent, child)`` :class:`Loaded` requests to diff: each request
    with the ``parent`` its metadata names, with nothing when that is ``null``,
    else with the request before it."""
    entries = _entries(Path(folder))
    # only the last few bodies stay in memory; an older parent is read again
    cache: dict[Path, Loaded] = {}

    def loaded(p: Path) -> Loaded:
        if p in cache:
            cache[p] = cache.pop(p)  # most recently used last
        else:
            body, meta = load_body(p)
            cache[p] = Loaded(p, body, meta)
            while len(cache) > _KEEP_LOADED:
                del cache[next(iter(cache))]
        return cache[p]

    by_name = {e.path.name: e for e in entries}
    by_seq = {e.seq: e for e in entries if e.seq is not None}
    for i, entry in enumerate(entries):
        if entry.parent is _UNSET:
            if i > 0:
                yield loaded(entries[i - 1].path), loaded(entry.path)
            continue
        if entry.parent is None:
            continue
        target = by_name.get(str(entry.parent))
        if target is None and isinstance(entry.parent, int):
            target = by_seq.get(entry.parent)
        if target is None:
            raise InputError(f"parent {entry.parent!r} is not in this folder", path=entry.path)
        yield loaded(target.path), loaded(entry.path)


class SnapshotWriter:
    """Writes numbered snapshots into a folder, thread-safely, numbering on
    after the highest ``seq`` already there."""

    def __init__(self, folder: str | Path) -> None:
        self.folder = Path(folder)
        self._lock = threading.Lock()
        self._next = 1
        if self.folder.is_dir():
            for p in self.folder.glob(f"*{SUFFIX}"):
                m = re.match(r"(\d+)-", p.name)
                if m:
                    self._next = max(self._next, int(m.group(1)) + 1)
        self.written: list[Path] = []

    def next_seq(self) -> int:
        with self._lock:
            seq = self._next
            self._next += 1
            return seq

    def write(self, snap: Snapshot) -> Path:
        """Write ``snap`` (its ``seq`` replaced by the next number)."""
        snap = replace(snap, seq=self.next_seq())
        path = write(self.folder, snap)
        with self._lock:
            self.written.append(path)
        return path


# -- what a request is --------------------------------------------------------------

_KEEP_EXACT = frozenset(
    {
        "content-type",
        "content-encoding",
        "accept",
        "user-agent",
        "anthropic-version",
        "anthropic-beta",
        "openai-beta",
        "openai-organization",
        "openai-project",
        "x-goog-api-client",
        "x-stainless-lang",
        "x-stainless-package-version",
        "x-stainless-helper-method",
    }
)


def header_matters(name: str) -> bool:
    """Headers kept in a snapshot: those that change what the provider does
    with the body or say which SDK made it; per-attempt noise (retry count,
    timeouts, OS) is dropped so two captures of one request have equal metadata."""
    low = name.lower()
    return low in _KEEP_EXACT or low.startswith(("anthropic-", "openai-"))


def describe(url: str | None, body: bytes) -> tuple[str | None, str | None, str | None]:
    """``(provider, family, model)`` of a request
    (:func:`fidelity.wire.evidence.describe_bytes`)."""
    return describe_bytes(url, body)[:3]


def from_request(
    *,
    method: str,
    url: str,
    headers: Iterable[tuple[str, str]] | Mapping[str, str],
    body: bytes,
    source: str | None = None,
    notes: Iterable[str] = (),
    body_exact: bool = True,
    redactor: Any = None,
    seq: int = 1,
    parent: Any = _UNSET,
    time: Any = _UNSET,
    usage: Any = _UNSET,
) -> Snapshot:
    """A redacted :class:`Snapshot` of a raw request (redaction runs here,
    before anything can be written)."""
    from .redact import Redactor, redact_all

    r = redactor if redactor is not None else Redactor()
    provider, family, model, conflict = describe_bytes(url, body)
    safe_url, safe_headers, safe_body, red = redact_all(url, headers, body, r, keep=header_matters)
    notes = list(notes)
    if conflict:
        notes.append(f"detection: {conflict}")
    if safe_body != body:
        body_exact = False
        notes.append("credentials were redacted inside the body; those bytes differ from what was sent")
    return Snapshot(
        body=safe_body,
        seq=seq,
        provider=provider,
        family=family,
        model=model,
        method=method.upper(),
        url=safe_url,
        headers=tuple(safe_headers),
        body_exact=body_exact,
        redacted=tuple(red.names()),
        notes=tuple(notes),
        source=source,
        parent=parent,
        time=time,
        usage=usage,
    )

