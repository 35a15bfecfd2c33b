"""Shape checks shared by the DSH readers: one-line errors naming file and line."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from ...errors import InputError
from ...model import FrozenDict

__all__ = []


def _fail(problem: str, path: Path, line: int | None) -> InputError:
    return InputError(problem, path=path, line=line)


def _obj(value: Any, what: str, path: Path, line: int) -> FrozenDict:
    if not isinstance(value, dict):
        raise _fail(f"{what} must be an object, got {type(value).__name__}", path, line)
    return value  # type: ignore[return-value]


def _int(value: Any, what: str, path: Path, line: int) -> int:
    if not isinstance(value, int) or isinstance(value, bool):
        raise _fail(f"{what} must be an integer, got {value!r}", path, line)
    return value
