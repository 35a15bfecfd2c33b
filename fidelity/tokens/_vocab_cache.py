"""A ``marshal`` copy of each parsed vocabulary under the user's cache folder,
so that a fresh process loads it fast. Its name and header carry the SHA-256
of the shipped file it was made from and of its own payload; a copy failing
either check is ignored and rewritten. ``FIDELITY_CACHE_DIR`` picks the
folder (``off``: none). Details: docs/speed.md, "Vocabularies from a validated copy".
"""

from __future__ import annotations

import hashlib
import marshal
import os
from collections.abc import Callable
from pathlib import Path

__all__ = ["cache_dir", "cached_ranks"]

_MAGIC = b"fidelity-vocab/1\n"
_HASH = 32  # bytes of a SHA-256 digest


def cache_dir() -> Path | None:
    """Where vocabulary copies live, or ``None`` when turned off."""
    env = os.environ.get("FIDELITY_CACHE_DIR")
    if env is not None:
        return None if env.strip().lower() in ("", "off", "0", "none") else Path(env)
    base = os.environ.get("XDG_CACHE_HOME") or str(Path.home() / ".cache")
    return Path(base) / "fidelity"


def cached_ranks(name: str, source: Path, parse: Callable[[Path], dict[bytes, int]]) -> dict[bytes, int]:
    """``parse(source)``, read from the validated copy when there is one."""
    folder = cache_dir()
    if folder is None:
        return parse(source)
    shipped = source.read_bytes()
    source_hash = hashlib.sha256(shipped).digest()
    copy = folder / f"vocab-{name}-{source_hash.hex()[:16]}.marshal"
    ranks = _read_copy(copy, source_hash)
    if ranks is not None:
        return ranks
    ranks = parse(source)
    _write_copy(copy, source_hash, ranks)
    return ranks


def _read_copy(copy: Path, source_hash: bytes) -> dict[bytes, int] | None:
    try:
        data = copy.read_bytes()
    except OSError:
        return None
    header = len(_MAGIC) + 2 * _HASH
    payload = memoryview(data)[header:]
    if data[:header] != _MAGIC + source_hash + hashlib.sha256(payload).digest():
        return None
    try:
        ranks = marshal.loads(payload)
    except (ValueError, EOFError, TypeError):
        return None
    if not isinstance(ranks, dict) or not ranks:
        return None
    return ranks


def _write_copy(copy: Path, source_hash: bytes, ranks: dict[bytes, int]) -> None:
    from ..jsonio import atomic_write

    payload = marshal.dumps(ranks)
    try:
        atomic_write(copy, _MAGIC + source_hash + hashlib.sha256(payload).digest() + payload)
    except OSError:  # a read-only home, a full disk: the copy is only a speed-up
        pass
