"""The index of every request line, held in columns of machine numbers
(names and keys numbered once): it forms the partitions and finds each
request's session predecessor; a worker makes each :class:`Entry` from its
partitions' columns as it replays them. Memory per entry: docs/scan.md."""

from __future__ import annotations

import math
from array import array
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

__all__ = ["Entry", "Rows", "PartitionRows"]


@dataclass(frozen=True, slots=True)
class Entry:
    """One indexed request line."""

    key: bytes
    time: float | None
    file: int
    offset: int
    length: int
    line: int  # 1-based line number in its file (filled in by the driver)
    session: str | None
    provider: str
    model: str


def _numbered(names: list[Any], numbers: dict[Any, int], value: Any) -> int:
    got = numbers.get(value)
    if got is None:
        got = numbers[value] = len(names)
        names.append(value)
    return got


class Rows:
    """Indexed lines, column by column: ``rows[i]`` is the tuple
    ``(key, time, file, offset, length, line, session, provider, model)``
    (``time`` ``None`` where the line has none)."""

    def __init__(self) -> None:
        self.keys: list[bytes] = []
        self.names: list[str | None] = [None]  # sessions, providers, models; 0 is no session
        self._key_no: dict[bytes, int] = {}
        self._name_no: dict[str | None, int] = {None: 0}
        self.key = array("i")
        self.time = array("d")  # NaN: no time
        self.file = array("i")
        self.offset = array("q")
        self.length = array("q")
        self.line = array("q")
        self.session = array("i")
        self.provider = array("i")
        self.model = array("i")

    def append(self, key: bytes, time: float | None, file: int, offset: int, length: int, line: int,
               session: str | None, provider: str, model: str) -> None:
        names, numbers = self.names, self._name_no
        self.key.append(_numbered(self.keys, self._key_no, key))
        self.time.append(math.nan if time is None else time)
        self.file.append(file)
        self.offset.append(offset)
        self.length.append(length)
        self.line.append(line)
        self.session.append(_numbered(names, numbers, session))
        self.provider.append(_numbered(names, numbers, provider))
        self.model.append(_numbered(names, numbers, model))

    def extend(self, other: Rows, line_base: int = 0) -> None:
        """Append ``other``'s rows (a chunk's), their line numbers counted
        from ``line_base``, their keys and names renumbered as this one's."""
        import numpy as np

        keys = np.array([_numbered(self.keys, self._key_no, k) for k in other.keys], dtype=np.int32)
        names = np.array([_numbered(self.names, self._name_no, n) for n in other.names], dtype=np.int32)
        if not len(other):
            return
        self.key.frombytes(keys[np.frombuffer(other.key, dtype=np.int32)].tobytes())
        self.time.extend(other.time)
        self.file.extend(other.file)
        self.offset.extend(other.offset)
        self.length.extend(other.length)
        self.line.frombytes((np.frombuffer(other.line, dtype=np.int64) + line_base).tobytes())
        for mine, theirs in ((self.session, other.session), (self.provider, other.provider),
                             (self.model, other.model)):
            mine.frombytes(names[np.frombuffer(theirs, dtype=np.int32)].tobytes())

    def __len__(self) -> int:
        return len(self.key)

    def __getitem__(self, i: int) -> tuple[Any, ...]:
        t = self.time[i]
        names = self.names
        return (self.keys[self.key[i]], None if t != t else t, self.file[i], self.offset[i], self.length[i],
                self.line[i], names[self.session[i]], names[self.provider[i]], names[self.model[i]])

    def __iter__(self) -> Iterator[tuple[Any, ...]]:
        return (self[i] for i in range(len(self)))

    def models(self) -> set[tuple[str, str]]:
        """The distinct ``(provider, model)`` pairs."""
        names = self.names
        return {(str(names[p]), str(names[m])) for p, m in set(zip(self.provider, self.model))}


@dataclass
class PartitionRows:
    """One partition's rows in time order, column by column. Iterating gives
    ``(entry, (pred_file, pred_offset) or None, same partition, is a cross
    predecessor)``; ``pred_file`` -1 means no session predecessor."""

    key: bytes
    provider: str
    model: str
    sessions: list[str | None]
    time: array[float]
    file: array[int]
    offset: array[int]
    length: array[int]
    line: array[int]
    session: array[int]
    pred_file: array[int]
    pred_offset: array[int]
    pred_same: bytes
    cross: bytes

    def __len__(self) -> int:
        return len(self.file)

    def __iter__(self) -> Iterator[tuple[Entry, tuple[int, int] | None, bool, bool]]:
        key, provider, model, sessions = self.key, self.provider, self.model, self.sessions
        for t, f, off, length, ln, s, pf, po, same, cross in zip(
                self.time, self.file, self.offset, self.length, self.line, self.session,
                self.pred_file, self.pred_offset, self.pred_same, self.cross):
            e = Entry(key, None if t != t else t, f, off, length, ln, sessions[s], provider, model)
            yield e, (None if pf < 0 else (pf, po)), bool(same), bool(cross)
