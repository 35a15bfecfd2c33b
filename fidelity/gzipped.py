"""Reading gzip input within limits: the one gunzip every reader of ``.gz``
recordings calls. It stops with one :class:`~fidelity.errors.InputError`
past :data:`MAX_DECOMPRESSED` bytes out or :data:`MAX_RATIO` bytes out per
byte in (DEFLATE expands at most about 1,030-fold:
https://www.zlib.net/zlib_tech.html); why: docs/hostile-input.md, "Limits".
"""

from __future__ import annotations

import io
import zlib
from collections.abc import Callable, Generator, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import BinaryIO

from .errors import InputError
from .jsonio import open_input

__all__ = ["MAX_DECOMPRESSED", "MAX_RATIO", "RATIO_FLOOR", "iter_gunzip", "gunzip", "gunzip_file", "gunzip_head",
           "limits", "parse_size", "is_gzip"]

#: most bytes a gzip input may decompress to
MAX_DECOMPRESSED = 1 << 30
#: most bytes out per compressed byte in (once RATIO_FLOOR bytes came out)
MAX_RATIO = 1000
#: output below which the ratio is not judged
RATIO_FLOOR = 1 << 24

_IN = 1 << 16  # compressed bytes read at a time
_OUT = 1 << 20  # most bytes one decompress call returns

_UNITS = {"": 1, "K": 1 << 10, "M": 1 << 20, "G": 1 << 30, "T": 1 << 40}


def parse_size(text: str) -> int:
    """``"512M"``, ``"1.5G"``, ``"1000000"`` as bytes (K, M, G, T powers of
    1,024; a trailing ``B``/``iB`` ignored); ``ValueError`` unless positive."""
    t = text.strip().upper().removesuffix("IB").removesuffix("B")
    unit = t[-1:] if t[-1:] in _UNITS and t[-1:] else ""
    number = t[: len(t) - len(unit)]
    try:
        value = float(number)
    except ValueError:
        raise ValueError(f"not a size: {text!r} (examples: 512M, 4G, 1000000)") from None
    if not value > 0 or value == float("inf"):
        raise ValueError(f"a size must be positive: {text!r}")
    return int(value * _UNITS[unit])


def _human(n: int) -> str:
    for unit, size in (("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if n >= size:
            return f"{n / size:,.1f} {unit}".replace(".0 ", " ")
    return f"{n:,} bytes"


@contextmanager
def limits(size: int | None = None, ratio: int | None = None) -> Iterator[None]:
    """Raise (or lower) :data:`MAX_DECOMPRESSED` and :data:`MAX_RATIO` for
    the duration of a command; ``None`` keeps the default."""
    global MAX_DECOMPRESSED, MAX_RATIO
    old = MAX_DECOMPRESSED, MAX_RATIO
    if size is not None:
        MAX_DECOMPRESSED = size
    if ratio is not None:
        MAX_RATIO = ratio
    try:
        yield
    finally:
        MAX_DECOMPRESSED, MAX_RATIO = old


def is_gzip(path: str | Path, head: bytes) -> bool:
    """A ``.gz`` name, or data that starts with the gzip magic."""
    return str(path).lower().endswith(".gz") or head[:2] == b"\x1f\x8b"


def iter_gunzip(read: Callable[[int], bytes], path: str | Path | None, *, size: int | None = None,
                ratio: int | None = None, wbits: int = 47) -> Generator[bytes, None, None]:
    """The decompressed bytes of the gzip stream ``read`` returns (concatenated
    members read, trailing garbage ignored, as gzip does), in pieces of at most
    1 MiB; :class:`InputError` naming ``path`` when it is not gzip, is
    truncated or passes a limit. ``wbits`` as for :func:`zlib.decompressobj`
    (47: gzip or zlib header; 15: zlib; -15: raw DEFLATE)."""
    size = MAX_DECOMPRESSED if size is None else size
    ratio = MAX_RATIO if ratio is None else ratio
    d = zlib.decompressobj(wbits)  # 47 = 32 + 15: a gzip (or zlib) header, the largest window
    consumed = produced = 0
    pending = b""
    started = False
    while True:
        if not pending:
            pending = read(_IN)
            if not pending:
                break
        if d.eof:  # the last member ended: another one, or trailing bytes to ignore
            if wbits != 47 or (pending[:2] != b"\x1f\x8b" and len(pending) >= 2):
                break
            d = zlib.decompressobj(wbits)
        started = True
        try:
            out = d.decompress(pending, _OUT)
        except zlib.error as exc:
            raise InputError(f"not valid gzip data: {exc}", path=path) from None
        left = d.unused_data if d.eof else d.unconsumed_tail
        consumed += len(pending) - len(left)
        pending = left
        if out:
            produced += len(out)
            if produced > size:
                raise InputError(f"gzip data decompresses to more than {_human(size)}; "
                                 "--max-decompressed raises the limit", path=path)
            if produced > RATIO_FLOOR and produced > ratio * max(consumed, 1):
                raise InputError(f"gzip data expands more than {ratio:,}-fold ({_human(produced)} from "
                                 f"{_human(consumed)}): a gzip bomb? --max-gzip-ratio raises the limit", path=path)
            yield out
    if not started or not d.eof:
        raise InputError("gzip file is truncated", path=path)


def gunzip(data: bytes, path: str | Path | None = None, *, wbits: int = 47) -> bytes:
    """``data`` decompressed whole within the limits (``wbits``: :func:`iter_gunzip`);
    ``path`` names the input in errors (``None``: the caller adds it)."""
    return b"".join(iter_gunzip(io.BytesIO(data).read, path, wbits=wbits))


def gunzip_file(path: str | Path, out: BinaryIO) -> int:
    """Decompress the gzip file ``path`` into ``out`` within the limits; bytes written."""
    n = 0
    with open_input(path) as fh:
        for piece in iter_gunzip(fh.read, path):
            out.write(piece)
            n += len(piece)
    return n


def gunzip_head(path: str | Path, n: int) -> bytes:
    """The first ``n`` decompressed bytes of the gzip file ``path``."""
    got = bytearray()
    with open_input(path) as fh:
        pieces = iter_gunzip(fh.read, path, size=max(n, 1) + _OUT, ratio=1 << 62)
        for piece in pieces:
            got += piece
            if len(got) >= n:
                break
        pieces.close()
    return bytes(got[:n])
