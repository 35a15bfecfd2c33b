"""Readers for the vocabulary files that installed packages ship (local
files only, unlike ``tiktoken.get_encoding``, which downloads): tiktoken's
``.tiktoken`` text (one ``<base64 token bytes> <rank>`` a line) and quicktok's
binary ``.vocab`` (layout read off the files: little-endian ``u32 count``,
then per entry ``u16 length``, the token bytes, ``u32 rank``)."""

from __future__ import annotations

import base64
import binascii
import importlib.util
import struct
from pathlib import Path

from ..errors import InputError

__all__ = ["package_file", "read_tiktoken_bpe", "read_quicktok_vocab"]


def package_file(package: str, *parts: str) -> Path:
    """Path of a data file inside an installed package, found without
    importing the package (importing quicktok loads its C++ core)."""
    spec = importlib.util.find_spec(package)
    if spec is None or not spec.submodule_search_locations:
        raise InputError(f"package {package!r} is not installed; it ships the vocabulary", path=package)
    return Path(list(spec.submodule_search_locations)[0], *parts)


def read_tiktoken_bpe(path: Path) -> dict[bytes, int]:
    """Parse a ``.tiktoken`` file into ``{token bytes: rank}``."""
    ranks: dict[bytes, int] = {}
    for number, line in enumerate(path.read_bytes().splitlines(), start=1):
        if not line:
            continue
        try:
            token, rank = line.split()
            ranks[base64.b64decode(token, validate=True)] = int(rank)
        except (ValueError, binascii.Error):
            raise InputError("not a '<base64> <rank>' line", path=path, line=number) from None
    return ranks


def read_quicktok_vocab(path: Path) -> dict[bytes, int]:
    """Parse a quicktok ``.vocab`` file into ``{token bytes: rank}``."""
    data = path.read_bytes()
    try:
        (count,) = struct.unpack_from("<I", data, 0)
        offset = 4
        ranks: dict[bytes, int] = {}
        for _ in range(count):
            (length,) = struct.unpack_from("<H", data, offset)
            offset += 2
            token = data[offset : offset + length]
            offset += length
            (rank,) = struct.unpack_from("<I", data, offset)
            offset += 4
            ranks[token] = rank
    except struct.error:
        raise InputError("truncated quicktok vocabulary", path=path) from None
    if offset != len(data):
        raise InputError(f"{len(data) - offset} trailing bytes after {count} entries", path=path)
    return ranks
