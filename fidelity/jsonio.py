"""Reading JSON and JSONL input, with one-line errors that name the file.

Every reader parses with :func:`loads` (one set of rules: see there), which
keeps object key order (Python dicts are ordered); the whole toolkit relies
on it: nothing here or elsewhere sorts keys.
"""

from __future__ import annotations

import itertools
import json
import math
import os
import sys
import tempfile
import threading
import tomllib
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from .errors import InputError

__all__ = ["read_bytes", "MAX_DEPTH", "loads", "depth", "load", "iter_jsonl", "atomic_write", "toml_loads", "load_toml"]


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


#: Deepest nesting of arrays and objects accepted. Real request bodies nest
#: a few dozen levels (tool schemas); the toolkit walks values recursively,
#: so a deeper document is refused up front with one clear line instead of a
#: ``RecursionError`` somewhere downstream.
MAX_DEPTH = 256


class _Refused(Exception):
    """Raised from inside ``json.loads`` hooks; becomes :class:`InputError`."""

    def __init__(self, problem: str, obj: Any = None) -> None:
        super().__init__(problem)
        self.problem, self.obj = problem, obj


class _DupDict(dict[str, Any]):
    """An object that held a duplicate key (only ever seen on the error path)."""

    duplicate: str = ""


def _pairs(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    d = dict(pairs)
    if len(d) != len(pairs):
        seen: set[str] = set()
        dup = _DupDict(pairs)
        dup.duplicate = next(k for k, _ in pairs if k in seen or seen.add(k))  # type: ignore[func-returns-value]
        raise _Refused("", dup)
    return d


def _constant(name: str) -> Any:
    raise _Refused(f"{name} is not JSON (RFC 8259 has no NaN or Infinity)")


def _float(text: str) -> float:
    value = float(text)
    if value in (math.inf, -math.inf):
        raise _Refused(f"number {text[:40]} is out of range (overflows a double)")
    return value


def loads(data: bytes | str, *, path: str | Path | None = None, line: int | None = None) -> Any:
    """Parse one JSON document strictly; the error says what is wrong and where.

    One parser for every reader (request bodies, snapshots, logs, HAR,
    cassettes, baselines, price tables), with these rules:

    * UTF-8 only; a byte order mark, invalid UTF-8 or an empty document is
      refused;
    * ``NaN``, ``Infinity`` and numbers that overflow a double are refused
      (not JSON; the SDKs cannot send them);
    * integers of any size are kept exactly (up to Python's 4300-digit
      conversion limit), lone surrogate escapes (``"\\ud800"``) are
      accepted, as ``json.loads`` (the SDKs' own parser) accepts them;
    * a **duplicate key** is refused with the JSON pointer of its object:
      parsers disagree on which value wins, so the cache-relevant bytes of
      such a body are ambiguous;
    * nesting deeper than :data:`MAX_DEPTH` is refused.

    Key order is kept (nothing is ever sorted).
    """
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
        limit = sys.get_int_max_str_digits() if hasattr(sys, "get_int_max_str_digits") else 4300
        problem = f"an integer has more than {limit} digits" if "digits" in str(exc) else _short(exc)
        raise InputError(f"not valid JSON: {problem}", path=path, line=line) from None
    if text.count("[") + text.count("{") > MAX_DEPTH and text_depth(data) > MAX_DEPTH:
        raise InputError(f"JSON nested more than {MAX_DEPTH} levels deep", path=path, line=line)
    return value


_PARSED = threading.local()


class parsed_once:  # noqa: N801 (used like the function it replaced: ``with parsed_once(...)``)
    """Within the block, :func:`loads` of this very ``data`` object returns
    ``value`` (its result, computed by the caller) instead of parsing again.

    ``fidelity diff`` parses each body to detect its dialect and model, and
    the dialect's cache view parses it again: on a body of megabytes the
    second strict parse is a tenth of a second of nothing new. Scoped to the
    block and to the identity of ``data``, so no other caller ever sees a
    shared (mutable) result. ``once``: only the first :func:`loads` gets
    ``value`` and the block forgets it (a hand-over: the block then holds no
    reference, so a large parsed tree goes when its new owner drops it).
    A class, not a generator: a generator-based context manager would keep
    ``value`` alive in its arguments until the block ends.
    """

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
    """Nesting depth of a *valid* JSON text (``str``, or its UTF-8 bytes),
    from its brackets outside strings; equal to :func:`depth` of its parsed
    value (a property test checks it) and far cheaper on a body of
    megabytes: every step runs in C over the bytes.

    Escapes go first: a ``\\\\`` pair, then a ``\\"`` pair (removed left
    to right, as a JSON reader pairs a run of backslashes). Then every byte
    but quotes and brackets is deleted; each quote left opens or closes a
    string (in UTF-8 no byte of a multi-byte character is a quote or a
    bracket), so splitting at the quotes puts the text outside strings at
    the even places.
    """
    data = text.encode("utf-8", "surrogatepass") if isinstance(text, str) else bytes(text)
    structure = data.replace(b"\\\\", b"").replace(b'\\"', b"").translate(None, _NOT_STRUCTURE)
    outside = b"".join(structure.split(b'"')[::2])
    return max(itertools.accumulate(map(_LEVEL.__getitem__, outside)), default=0)


def depth(value: Any, limit: int | None = None) -> int:
    """Nesting depth of a parsed value (a scalar is 0), iteratively. With
    ``limit``, the walk stops at the first container deeper than it and
    returns that level, so a self-referencing value (a recursive YAML alias,
    ``&a [*a]``) ends instead of looping."""
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
    """Name the duplicate key and the pointer of its object (found with a
    second, pointer-tracking pass; only ever run on the error path)."""
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
    def hook(pairs: list[tuple[str, Any]]) -> Any:
        d = dict(pairs)
        if len(d) != len(pairs):
            seen: set[str] = set()
            dup = _DupDict(d)
            dup.duplicate = next(k for k, _ in pairs if k in seen or seen.add(k))  # type: ignore[func-returns-value]
            return dup
        return d

    root = json.loads(text, object_pairs_hook=hook, parse_constant=_constant, parse_float=_float)
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


def iter_jsonl(path: str | Path) -> Iterator[tuple[int, Any]]:
    """Yield ``(line_number, value)`` for each non-blank line of a JSONL file."""
    data = read_bytes(path)
    if not data.strip():
        raise InputError("empty file, expected JSON lines", path=path)
    for number, raw in enumerate(data.split(b"\n"), start=1):
        if raw.strip():
            yield number, loads(raw, path=path, line=number)


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


_UMASK = _umask()  # read once: os.umask is process-wide, not thread-safe


def atomic_write(path: str | Path, data: bytes) -> None:
    """Write ``data`` to a fresh temporary file beside ``path`` and rename it
    into place, so a reader never sees a half-written report, baseline or
    snapshot: after a crash (disk full, interrupt) ``path`` holds either its
    old content or the new, never a mix, and no temporary file is left."""
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
