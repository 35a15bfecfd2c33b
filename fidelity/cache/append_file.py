"""An unnamed temporary file that bytes are appended to and read back from
by offset: where the scan's state that grows with a partition and is read
rarely goes (:class:`~fidelity.cache.prefix_store.PrefixStore`'s request
ids, :mod:`fidelity.scan.segments`). The file has no name from the start
(``tempfile.TemporaryFile``), so nothing is left behind, and it is made at
the first append."""

from __future__ import annotations

import os
import tempfile
from typing import Any

__all__ = ["AppendFile"]


class AppendFile:
    def __init__(self, prefix: str = "fidelity-") -> None:
        self._prefix = prefix
        self._file: Any = None
        #: bytes appended so far (the next append's offset)
        self.size = 0

    def append(self, data: bytes | bytearray | memoryview) -> int:
        """Write ``data`` at the end; its offset."""
        if self._file is None:
            self._file = tempfile.TemporaryFile(prefix=self._prefix)
        view = memoryview(data).cast("B")
        at, done = self.size, 0
        while done < len(view):
            done += os.pwrite(self._file.fileno(), view[done:], at + done)
        self.size += len(view)
        return at

    def read(self, offset: int, n: int) -> bytes:
        """The ``n`` bytes at ``offset``."""
        got = os.pread(self._file.fileno(), n, offset) if n else b""
        if len(got) != n:  # the file was cut short under us
            raise OSError(f"{n} bytes at {offset} of a temporary file: {len(got)} read back")
        return got

    def close(self) -> None:
        if self._file is not None:
            self._file.close()
            self._file = None
