"""Reading JSON and JSONL input, with one-line errors that name the file.

orjson keeps object key order (Python dicts are ordered), which the whole
toolkit relies on: nothing here or elsewhere sorts keys.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any, Iterator

import orjson

from .errors import InputError


def read_bytes(path: str | Path) -> bytes:
    """Read a whole input file; missing, unreadable or directory paths raise
    :class:`InputError` naming the path."""
    p = Path(path)
    try:
        return p.read_bytes()
    except FileNotFoundError:
        raise InputError("no such file", path=p) from None
    except IsADirectoryError:
        raise InputError("is a directory, expected a file", path=p) from None
    except PermissionError:
        raise InputError("permission denied", path=p) from None
    except OSError as exc:
        raise InputError(exc.strerror or str(exc), path=p) from None


def loads(data: bytes | str, *, path: str | Path | None = None, line: int | None = None) -> Any:
    """Parse one JSON document; the error says what is wrong and where."""
    if isinstance(data, str):
        data = data.encode("utf-8", "surrogatepass")
    if data.startswith(b"\xef\xbb\xbf"):
        raise InputError("starts with a UTF-8 byte order mark; JSON bodies must not", path=path, line=line)
    if not data.strip():
        raise InputError("empty input, expected JSON", path=path, line=line)
    try:
        return orjson.loads(data)
    except orjson.JSONDecodeError as exc:
        raise InputError(f"not valid JSON: {_short(exc)}", path=path, line=line) from None


def load(path: str | Path) -> Any:
    return loads(read_bytes(path), path=path)


def iter_jsonl(path: str | Path) -> Iterator[tuple[int, Any]]:
    """Yield ``(line_number, value)`` for each non-blank line of a JSONL file."""
    data = read_bytes(path)
    if not data.strip():
        raise InputError("empty file, expected JSON lines", path=path)
    for number, raw in enumerate(data.split(b"\n"), start=1):
        if raw.strip():
            yield number, loads(raw, path=path, line=number)


def atomic_write(path: str | Path, data: bytes) -> None:
    """Write ``data`` to a temporary file beside ``path`` and rename it into
    place, so a reader never sees a half-written report, baseline or snapshot."""
    p = Path(path)
    p.parent.mkdir(parents=True, exist_ok=True)
    tmp = p.with_name(f".{p.name}.{os.getpid()}.tmp")
    try:
        with open(tmp, "wb") as fh:
            fh.write(data)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, p)
    finally:
        if tmp.exists():
            tmp.unlink()


def _short(exc: Exception) -> str:
    text = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
    return text[:160]
