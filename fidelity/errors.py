"""Errors that the command line turns into one line and exit code 2."""

from __future__ import annotations

from pathlib import Path
from typing import Any

__all__ = ["FidelityError", "InputError", "UnknownName", "ForkUnavailable"]


class FidelityError(Exception):
    """Base class of every error the toolkit raises on purpose; pickles with
    its message and attributes (a scan worker's error reaches the command intact)."""

    def __reduce__(self) -> tuple[Any, ...]:
        return (_restored, (type(self), self.args, dict(self.__dict__)))


def _restored(cls: type[FidelityError], args: tuple[Any, ...], state: dict[str, Any]) -> FidelityError:
    """An error as it was pickled, without calling its constructor again."""
    err = cls.__new__(cls)
    err.args = args
    err.__dict__.update(state)
    return err


class InputError(FidelityError):
    """Bad input: names the file, where in it (line or JSON pointer) and the problem.

    >>> str(InputError("empty file", path="a.json"))
    'a.json: empty file'
    >>> str(InputError("expected an object", path="log.jsonl", line=3))
    'log.jsonl:3: expected an object'
    """

    def __init__(
        self,
        problem: str,
        *,
        path: str | Path | None = None,
        line: int | None = None,
        pointer: str | None = None,
    ) -> None:
        self.problem = problem
        self.path = str(path) if path is not None else None
        self.line = line
        self.pointer = pointer
        super().__init__(self.format())

    def format(self) -> str:
        where = self.path or "<input>"
        if self.line is not None:
            where += f":{self.line}"
        if self.pointer is not None:
            where += f" at {self.pointer or '/'}"
        return f"{where}: {self.problem}"

    def at(self, path: str | Path) -> InputError:
        """Return this error re-addressed to ``path`` when it had no file yet."""
        if self.path is not None:
            return self
        return InputError(self.problem, path=path, line=self.line, pointer=self.pointer)


class UnknownName(FidelityError):
    """An unknown provider, dialect, model, tokenizer, cache model or variant."""

    def __init__(self, what: str, name: str, known: list[str] | tuple[str, ...]) -> None:
        self.what, self.name, self.known = what, name, tuple(known)
        super().__init__(f"unknown {what} {name!r}; known: {', '.join(sorted(known))}")


class ForkUnavailable(FidelityError):
    """A fork cannot be built (no completed turn after the anchor, recursion guard)."""
