"""Request logs: the JSONL request-log format (one request per line,
docs/scan.md "Log format"), and every other input turned into it.

Recordings are read by the one reader every command uses
(:mod:`fidelity.traffic.sources`) and DeepSeek Harness logs by their
importer, then written in this format (:func:`prepare_inputs`), so that one
reader and one partition function serve them all."""

from __future__ import annotations

import base64
import datetime as _dt
import functools
import mmap
import os
import re
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import orjson

from .. import wire
from ..capture.redact import url_problem
from ..capture.snapshot import utf8_text
from ..errors import InputError
from ..gzipped import gunzip_file
from ..traffic.requestlog import BadLine, parse
from ..wire.evidence import detect_request, endpoint_of

__all__ = ["Record", "BadLine", "parse_record", "prepare_inputs", "iter_lines", "endpoint_of", "MAX_LINE"]

#: default limit on one log line (a "huge body" beyond it is a bad line)
MAX_LINE = 64 * 1024 * 1024


@dataclass
class Record:
    """One parsed request line."""

    time: float | None
    day: str
    dialect: Any
    provider: str
    model: str
    body: dict[str, Any]
    usage: dict[str, Any] | None
    session: str | None
    raw_body: bytes | None  # the exact body bytes when the line holds them as text
    url: str = ""  # "" when the line names none
    #: the body or the URL's path chose the dialect (not a provider's URL or a ``provider`` hint)
    detected: bool = False
    status: int | None = None  # the response's HTTP status, where logged


#: the reasons (:attr:`fidelity.wire.evidence.Detection.why`) of a dialect no part of the body chose
_NOT_BY_BODY = ("URL: ", "snapshot metadata: ", "--provider ")

_url_problem = functools.lru_cache(maxsize=4096)(url_problem)  # a log names few URLs


@functools.cache
def _date(n: int) -> str:
    """The UTC date (``YYYY-MM-DD``) of day ``n`` since the epoch."""
    return _dt.datetime.fromtimestamp(n * 86400, _dt.UTC).strftime("%Y-%m-%d")


def _day(t: float) -> str:
    return _date(int(t // 86400))


def parse_record(line: bytes) -> Record:
    """One log line, read by the one request-log parser
    (:func:`fidelity.traffic.requestlog.parse`) and routed by the one
    detection; :class:`BadLine` says why it cannot be scanned."""
    if line.startswith(b'{"skipped":'):  # written by prepare_inputs for an importer's skip
        obj = orjson.loads(line)
        if isinstance(obj, dict) and "body" not in obj:
            raise BadLine("skipped by the importer", str(obj["skipped"])[:200])
    got = parse(line)
    url = got.url
    problem = _url_problem(url) if url else None
    if problem is not None:  # set apart, as the importers set such an entry apart
        raise BadLine("malformed URL", problem)
    # the one detection (what replay and tokens-check route by)
    try:
        chosen = detect_request(got.body, url=url or None, meta_dialect=got.hint)
    except InputError:
        chosen = None
    if chosen is None or chosen.dialect not in wire.names():
        raise BadLine("unknown provider", "no URL route and no dialect recognises the body")
    if chosen.model is None:
        raise BadLine("no model", "neither the body nor the URL names a model")
    dialect = wire.get(chosen.dialect)
    detected = not chosen.why.startswith(_NOT_BY_BODY)
    t = got.time
    return Record(t, "unknown" if t is None else _day(t), dialect, chosen.family or dialect.provider, chosen.model,
                  got.body, got.usage(), got.session, got.raw, url, detected, got.status)


def iter_lines(path: str | Path, start: int = 0, end: int | None = None,
               limit: int = MAX_LINE) -> Iterator[tuple[int, bytes | None]]:
    """``(offset, line)`` for each line that starts in ``[start, end)`` (a
    chunk that starts mid-line skips to the next line); a line longer than
    ``limit`` (newline not counted) is yielded as ``None`` without being copied."""
    with open(path, "rb") as fh:
        size = os.fstat(fh.fileno()).st_size
        if size == 0 or start >= size:
            return
        with mmap.mmap(fh.fileno(), 0, access=mmap.ACCESS_READ) as mm:
            pos = start
            if start > 0 and mm[start - 1] != 0x0A:
                nl = mm.find(b"\n", start)
                if nl < 0:
                    return
                pos = nl + 1
            stop = size if end is None else min(end, size)
            while pos < stop:
                nl = mm.find(b"\n", pos)
                nxt = size if nl < 0 else nl + 1
                if (size if nl < 0 else nl) - pos > limit:
                    yield pos, None
                else:
                    yield pos, mm[pos:nxt]
                pos = nxt


# -- other inputs -> record lines ---------------------------------------------------


def _record_line(body: bytes, *, url: str | None, provider: str | None, session: str, where: str,
                 time: Any = None, used: Any = None, status: int | None = None) -> bytes:
    rec: dict[str, Any] = {"time": time, "url": url or None, "provider": provider, "session": utf8_text(session),
                           "source": utf8_text(where)}
    try:
        rec["body"] = body.decode("utf-8")
    except UnicodeDecodeError:
        rec["body_base64"] = base64.b64encode(body).decode("ascii")
    if used is not None:
        rec["usage"] = used
    if status is not None and status >= 400:  # what the scan reads it for (a failed request)
        rec["status"] = status
    return orjson.dumps(rec) + b"\n"


def _recording(source: Any, out: Any) -> None:
    """A recording read by the one reader, as record lines with its decision
    (a request the simulator does not take written as skipped, with the
    reason; a failed one keeps its status, which the scan counts)."""
    from ..traffic.sources import read

    for ex in read(source):
        if ex.skip is not None and not (ex.status is not None and ex.status >= 400):
            out.write(orjson.dumps({"skipped": ex.skip[:300]}) + b"\n")
            continue
        out.write(_record_line(ex.body, url=ex.url, provider=ex.dialect, session=ex.session or str(source.path),
                               where=f"{ex.source}#{ex.where}" if ex.where else ex.source, time=ex.time,
                               used=dict(ex.usage) if ex.usage is not None else None, status=ex.status))


def _imported(path: Path, out: Any, kind: str) -> None:
    from ..capture.importers import import_file

    imported = import_file(path, kind)
    for snap in imported.snapshots:
        out.write(_record_line(snap.body, url=snap.url, provider=snap.provider, session=str(path),
                               where=snap.source or str(path), time=snap.time, used=snap.usage))
    # what the importer could not turn into a request is reported, not dropped
    for warning in imported.warnings:
        if "skipped" in warning:
            out.write(orjson.dumps({"skipped": warning[:300]}) + b"\n")
    # each set-apart entry with its reason (classify's, or a malformed URL); the rest unexplained
    for reason, count in sorted(imported.reasons.items()):
        out.writelines([orjson.dumps({"skipped": f"{kind}: {reason}"[:300]}) + b"\n"] * count)
    for _ in range(imported.skipped - sum(imported.reasons.values())):
        out.write(orjson.dumps({"skipped": f"{kind}: an entry that is not a model request"}) + b"\n")


def _parquet_log(path: Path, out: Any) -> None:
    """A Parquet request log (the JSONL format's members as columns, docs/scan.md)
    written as JSONL, a row group at a time so memory stays with the batch."""
    try:
        import pyarrow.parquet as pq
    except ImportError:
        raise InputError("reading Parquet needs pyarrow: pip install 'fidelity[scan-parquet]'", path=path) from None
    try:
        reader = pq.ParquetFile(path)
        for batch in reader.iter_batches(batch_size=1024):
            for row in batch.to_pylist():
                out.write(_parquet_row(row))
    except (OSError, ValueError) as exc:  # pyarrow's ArrowInvalid / ArrowIOError are ValueError / OSError
        raise InputError(f"not a readable Parquet file: {str(exc).splitlines()[0][:120]}", path=path) from None


def _parquet_row(row: dict[str, Any]) -> bytes:
    rec: dict[str, Any] = {}
    for key, value in row.items():
        if value is None:
            continue
        if isinstance(value, _dt.datetime):
            value = (value if value.tzinfo else value.replace(tzinfo=_dt.UTC)).isoformat()
        elif isinstance(value, (bytes, bytearray)):
            if key == "body":
                rec["body_base64"] = base64.b64encode(value).decode("ascii")
                continue
            value = value.decode("utf-8", "replace")
        elif key in ("usage", "response") and isinstance(value, str):
            try:
                value = orjson.loads(value)
            except orjson.JSONDecodeError:
                pass  # an SSE stream or other text: read as text
        rec[key] = value
    return orjson.dumps(rec, default=str) + b"\n"


def prepare_inputs(paths: list[str | Path], workdir: Path,
                   _seen: set[tuple[str, Path]] | None = None) -> list[tuple[Path, str]]:
    """The plain request-log files to scan, with the label of the input each
    came from (``PATH``; ``PATH#request`` for a converted input, lines counting
    its requests, then what the importer skipped; ``PATH#row`` for Parquet).
    Plain logs are used as they are; ``.gz`` logs, Parquet logs, recordings and
    importer formats are converted into ``workdir``; inputs are never modified.
    Each file is read once however often it is given, and a DeepSeek Harness
    session file stands for its whole folder (the importer reads them together)."""
    from ..capture.importers import guess_kind
    from ..traffic.sources import READ_KINDS, Source, kind_of, list_sources

    seen: set[tuple[str, Path]] = set() if _seen is None else _seen
    out: list[tuple[Path, str]] = []
    for i, given in enumerate(paths):
        p = Path(given)
        if not p.exists():
            raise InputError("no such file or folder", path=p)
        if p.is_dir():
            # the one listing: recursive, a folder of snapshots is one recording wherever it is
            found = [item for item in list_sources(p) if item.kind != "unknown"]
            if not found:
                raise InputError("no request logs or snapshots in this folder", path=p)
            for n, item in enumerate(found):
                if item.kind == "snapshots":
                    if ("snapshots", item.path.resolve()) in seen:
                        continue
                    seen.add(("snapshots", item.path.resolve()))
                    workdir.mkdir(parents=True, exist_ok=True)
                    target = workdir / f"{i:04d}-{n:05d}-folder.jsonl"
                    with open(target, "wb") as fh:
                        _recording(item, fh)
                    out.append((target, f"{item.path}#request"))
                else:
                    out.extend(prepare_inputs([item.path], workdir / f"{i:04d}-{n:05d}", seen))
            continue
        if ("file", p.resolve()) in seen:
            continue
        seen.add(("file", p.resolve()))
        workdir.mkdir(parents=True, exist_ok=True)
        name = p.name.lower()
        recorded = kind_of(p)
        target = workdir / f"{i:04d}-{re.sub(r'[^A-Za-z0-9._-]+', '_', p.name)}.jsonl"
        if name.endswith(".parquet"):
            with open(target, "wb") as fh:
                _parquet_log(p, fh)
            out.append((target, f"{p}#row"))
        elif recorded == "jsonl" and name.endswith(".gz"):
            target = workdir / f"{i:04d}-{p.name[:-3]}"
            try:
                with open(target, "wb") as dst:
                    gunzip_file(p, dst)  # within the limits: a gzip bomb stops before it fills the disk
            except BaseException:
                target.unlink(missing_ok=True)
                raise
            out.append((target, str(p)))
        elif recorded == "jsonl":
            out.append((p, str(p)))
        elif recorded in READ_KINDS:
            with open(target, "wb") as fh:
                _recording(Source(recorded, p), fh)
            out.append((target, f"{p}#request"))
        else:
            kind = guess_kind(p)
            if kind == "dsh":
                folder = p.parent.resolve()
                if ("dsh", folder) in seen:
                    continue  # its folder's sessions were read with another of its files
                seen.add(("dsh", folder))
            with open(target, "wb") as fh:
                _imported(p, fh, kind)
            out.append((target, f"{p}#request"))
    return out
