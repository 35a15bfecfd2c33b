"""Reading JSON and TOML input with one-line errors that name the file, and
writing files atomically. Every reader parses with :func:`loads`, which keeps
object key order: nothing here or elsewhere sorts keys."""

from __future__ import annotations

import itertools
import json
import math
import os
import sys
import tempfile
import threading
import tomllib
from pathlib import Path
from typing import Any, BinaryIO

from .errors import InputError

__all__ = ["read_bytes", "open_input", "MAX_DEPTH", "loads", "depth", "load", "atomic_write", "toml_loads",
           "load_toml"]


def _unreadable(exc: OSError, path: str | Path) -> InputError:
    if isinstance(exc, FileNotFoundError):
        return InputError("no such file", path=path)
    if isinstance(exc, IsADirectoryError):
        return InputError("is a directory, expected a file", path=path)
    if isinstance(exc, PermissionError):
        return InputError("permission denied", path=path)
    return InputError(exc.strerror or str(exc), path=path)


def read_bytes(path: str | Path) -> bytes:
    """A whole input file; a missing, unreadable or directory path raises
    :class:`InputError` naming it."""
    p = Path(path)
    try:
        return p.read_bytes()
    except OSError as exc:
        raise _unreadable(exc, p) from None


def open_input(path: str | Path) -> BinaryIO:
    """``path`` opened for reading bytes, with :func:`read_bytes`'s errors."""
    try:
        return open(path, "rb")
    except OSError as exc:
        raise _unreadable(exc, path) from None


#: Deepest nesting of arrays and objects accepted: a deeper document is refused
#: up front instead of a ``RecursionError`` downstream (real bodies nest a few dozen).
MAX_DEPTH = 256


class _Refused(Exception):
    """Raised from inside ``json.loads`` hooks; becomes :class:`InputError`."""

    def __init__(self, problem: str, obj: Any = None) -> None:
        super().__init__(problem)
        self.problem, self.obj = problem, obj


class _DupDict(dict[str, Any]):
    """An object that held a duplicate key (only ever seen on the error path)."""

    duplicate: str = ""


def _marked(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    """The object of ``pairs``: a :class:`_DupDict` naming its first repeated key when it has one."""
    d = dict(pairs)
    if len(d) != len(pairs):
        seen: set[str] = set()
        dup = _DupDict(d)
        dup.duplicate = next(k for k, _ in pairs if k in seen or seen.add(k))  # type: ignore[func-returns-value]
        return dup
    return d


def _pairs(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    d = _marked(pairs)
    if isinstance(d, _DupDict):
        raise _Refused("", d)
    return d


def _constant(name: str) -> Any:
    raise _Refused(f"{name} is not JSON (RFC 8259 has no NaN or Infinity)")


def _float(text: str) -> float:
    value = float(text)
    if value in (math.inf, -math.inf):
        raise _Refused(f"number {text[:40]} is out of range (overflows a double)")
    return value


def loads(data: bytes | str, *, path: str | Path | None = None, line: int | None = None) -> Any:
    """Parse one JSON document strictly (every reader's parser), keeping key order.

    Refused with an error saying what and where: a byte order mark, invalid
    UTF-8, an empty document, NaN / Infinity / a number overflowing a double,
    a duplicate key (named with its object's pointer), nesting past
    :data:`MAX_DEPTH`. Integers are kept exactly and lone surrogate escapes
    accepted, as ``json.loads`` (the SDKs' parser) does. Rules and why:
    docs/hostile-input.md."""
    known = getattr(_PARSED, "values", None)
    entry = known.get(id(data)) if known is not None else None
    if entry is not None and entry[0] is data:  # parsed already, inside ``parsed_once`` (see there)
        if entry[2] and known is not None:
            del known[id(data)]  # handed over once: the caller's reference is now the only one
        return entry[1]
    if isinstance(data, str):
        text = data
    else:
        data = bytes(data)
        if data.startswith(b"\xef\xbb\xbf"):
            raise InputError("starts with a UTF-8 byte order mark; JSON bodies must not", path=path, line=line)
        try:
            text = data.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise InputError(f"not UTF-8: invalid byte 0x{data[exc.start]:02x} at offset {exc.start}",
                             path=path, line=line) from None
    if text.startswith("\ufeff"):
        raise InputError("starts with a byte order mark; JSON bodies must not", path=path, line=line)
    if not text.strip():
        raise InputError("empty input, expected JSON", path=path, line=line)
    try:
        value = json.loads(text, object_pairs_hook=_pairs, parse_constant=_constant, parse_float=_float)
    except json.JSONDecodeError as exc:
        raise InputError(f"not valid JSON: {exc.msg} (line {exc.lineno} column {exc.colno}, char {exc.pos})",
                         path=path, line=line) from None
    except _Refused as exc:
        if isinstance(exc.obj, _DupDict):
            raise _duplicate(text, exc.obj.duplicate, path, line) from None
        raise InputError(f"not valid JSON: {exc.problem}", path=path, line=line) from None
    except RecursionError:
        raise InputError(f"JSON nested more than {MAX_DEPTH} levels deep", path=path, line=line) from None
    except MemoryError:
        raise InputError(f"too large to parse in memory ({len(text):,} characters)", path=path, line=line) from None
    except ValueError as exc:  # int() beyond sys.get_int_max_str_digits()
        too_long = f"an integer has more than {sys.get_int_max_str_digits()} digits"
        problem = too_long if "digits" in str(exc) else _short(exc)
        raise InputError(f"not valid JSON: {problem}", path=path, line=line) from None
    if text.count("[") + text.count("{") > MAX_DEPTH and text_depth(data) > MAX_DEPTH:
        raise InputError(f"JSON nested more than {MAX_DEPTH} levels deep", path=path, line=line)
    return value


_PARSED = threading.local()


class parsed_once:  # noqa: N801 (used like the function it replaced: ``with parsed_once(...)``)
    """Within the block, :func:`loads` of this very ``data`` object (by
    identity) returns ``value``, the caller's parse of it, instead of parsing
    again. ``once``: only the first :func:`loads` gets it and the block then
    holds no reference to it (a class, not a generator, for that reason)."""

    def __init__(self, data: bytes, value: Any, *, once: bool = False) -> None:
        self._data = data
        self._entry: tuple[bytes, Any, bool] | None = (data, value, once)
        self._outer = False

    def __enter__(self) -> None:
        known: dict[int, tuple[bytes, Any, bool]] | None = getattr(_PARSED, "values", None)
        self._outer = known is None
        if known is None:
            known = _PARSED.values = {}
        if self._entry is None:
            raise RuntimeError("a parsed_once block is entered once")
        known[id(self._data)] = self._entry
        self._entry = None

    def __exit__(self, *exc: object) -> None:
        known: dict[int, tuple[bytes, Any, bool]] | None = getattr(_PARSED, "values", None)
        if known is not None:
            known.pop(id(self._data), None)
        if self._outer:
            _PARSED.values = None


#: every byte but the brackets and the quote, deleted by ``bytes.translate``
_NOT_STRUCTURE = bytes(b for b in range(256) if b not in b'[]{}"')
_LEVEL = [0] * 256
_LEVEL[ord("[")] = _LEVEL[ord("{")] = 1
_LEVEL[ord("]")] = _LEVEL[ord("}")] = -1


def text_depth(text: str | bytes) -> int:
    """Nesting depth of a *valid* JSON text (``str`` or UTF-8 bytes), equal to
    :func:`depth` of its parse, in C-speed steps: escaped backslashes, then
    escaped quotes, are removed; of the quotes and brackets left, the text
    outside strings lies between every other quote."""
    data = text.encode("utf-8", "surrogatepass") if isinstance(text, str) else bytes(text)
    structure = data.replace(b"\\\\", b"").replace(b'\\"', b"").translate(None, _NOT_STRUCTURE)
    outside = b"".join(structure.split(b'"')[::2])
    return max(itertools.accumulate(map(_LEVEL.__getitem__, outside)), default=0)


def depth(value: Any, limit: int | None = None) -> int:
    """Nesting depth of a parsed value (a scalar is 0), iteratively. With
    ``limit``, the first container deeper than it ends the walk with its
    level (so a self-referencing YAML alias ends)."""
    deepest = 0
    stack = [(value, 1)]
    while stack:
        node, level = stack.pop()
        if isinstance(node, dict):
            node = node.values()
        elif not isinstance(node, list):
            continue
        deepest = max(deepest, level)
        if limit is not None and level > limit:
            return level
        stack.extend((child, level + 1) for child in node if isinstance(child, (dict, list)))
    return deepest


def _duplicate(text: str, key: str, path: str | Path | None, line: int | None) -> InputError:
    """Name the duplicate key and its object's pointer (a second pass, on the error path only)."""
    try:
        where = _first_duplicate(text)
    except json.JSONDecodeError as exc:  # broken further on as well: report that first
        return InputError(f"not valid JSON: {exc.msg} (line {exc.lineno} column {exc.colno}, char {exc.pos})",
                          path=path, line=line)
    except (_Refused, ValueError, RecursionError):
        where = None
    pointer, key = where if where is not None else (None, key)
    return InputError(f"duplicate key {key!r}: parsers disagree on which value wins, so the bytes "
                      "that matter are ambiguous; remove one", path=path, line=line, pointer=pointer)


def _first_duplicate(text: str) -> tuple[str, str] | None:
    root = json.loads(text, object_pairs_hook=_marked, parse_constant=_constant, parse_float=_float)
    stack: list[tuple[Any, str]] = [(root, "")]
    while stack:
        node, ptr = stack.pop()
        if isinstance(node, _DupDict):
            return ptr, node.duplicate
        if isinstance(node, dict):
            items = list(node.items())
        elif isinstance(node, list):
            items = list(enumerate(node))
        else:
            continue
        for k, v in reversed(items):
            stack.append((v, f"{ptr}/{str(k).replace('~', '~0').replace('/', '~1')}"))
    return None


def load(path: str | Path) -> Any:
    return loads(read_bytes(path), path=path)


def toml_loads(data: bytes | str, *, path: str | Path) -> dict[str, Any]:
    """A TOML document; text that is not UTF-8 or not TOML raises
    :class:`InputError` naming ``path`` and the parser's complaint."""
    try:
        return tomllib.loads(data.decode("utf-8") if isinstance(data, bytes) else data)
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
        raise InputError(f"not valid TOML: {exc}", path=path) from None


def load_toml(path: str | Path) -> dict[str, Any]:
    """:func:`toml_loads` of a file (:func:`read_bytes`'s errors for a missing one)."""
    return toml_loads(read_bytes(path), path=path)


_UMASK = os.umask(0)  # read once (os.umask is process-wide, not thread-safe), then put back
os.umask(_UMASK)


def atomic_write(path: str | Path, data: bytes) -> None:
    """Write ``data`` to a temporary file beside ``path`` and rename it into
    place: ``path`` holds its old content or the new, never a mix, and no
    temporary file is left behind."""
    p = Path(path)
    p.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp_name = tempfile.mkstemp(prefix=f".{p.name}.", suffix=".tmp", dir=p.parent)
    tmp = Path(tmp_name)
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
            fh.flush()
            os.fsync(fh.fileno())
        os.chmod(tmp, 0o666 & ~_UMASK)  # mkstemp makes 0600; give the file the usual mode
        os.replace(tmp, p)
    finally:
        if tmp.exists():
            tmp.unlink()


def _short(exc: Exception) -> str:
    text = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
    return text[:160]
