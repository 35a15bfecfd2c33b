"""The distinct segment bytes of one partition, numbered by their 16-byte
BLAKE2b digest, their bytes kept in an unnamed temporary file and read back
by number when a break is classified."""

from __future__ import annotations

import hashlib
from array import array

from ..cache.append_file import AppendFile

__all__ = ["SegmentBytes"]

#: bytes gathered before a write to the file
FLUSH_BYTES = 1 << 20


class SegmentBytes:
    """Numbers for distinct byte strings, and their bytes back by number."""

    def __init__(self, flush_bytes: int = FLUSH_BYTES) -> None:
        self._ids: dict[bytes, int] = {}
        self._ends = array("q", [0])  # segment i is [ends[i], ends[i + 1]) of the file and buffer
        self._buf = bytearray()
        self._flush_bytes = flush_bytes
        self._file = AppendFile("fidelity-scan-segments-")  # its size: the bytes already written

    def number(self, data: bytes) -> int:
        """The number of ``data``: the one it had, or the next."""
        key = hashlib.blake2b(data, digest_size=16).digest()
        got = self._ids.get(key)
        if got is None:
            got = self._ids[key] = len(self._ends) - 1
            self._buf += data
            self._ends.append(self._ends[-1] + len(data))
            if len(self._buf) >= self._flush_bytes:
                self._flush()
        return got

    def __getitem__(self, number: int) -> bytes:
        if not 0 <= number < len(self):
            raise IndexError(number)
        start, end = self._ends[number], self._ends[number + 1]
        flushed = self._file.size
        if start >= flushed:
            return bytes(self._buf[start - flushed : end - flushed])
        return self._file.read(start, end - start)

    def __len__(self) -> int:
        return len(self._ends) - 1

    def _flush(self) -> None:
        self._file.append(bytes(self._buf))
        self._buf.clear()

    def close(self) -> None:
        """Remove the file (the numbers and bytes are gone with it)."""
        self._file.close()
