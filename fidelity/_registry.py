"""The one registry idiom: name -> entry, with aliases and lazy imports. Each
kind (dialects, cache models, tokenizers, builders, deltas, importers) keeps
one :class:`Registry`; an entry is an object or a ``"package.module:attribute"``
string imported when first asked for (docs/architecture.md)."""

from __future__ import annotations

import importlib
import threading
from collections.abc import Iterator
from typing import Generic, TypeVar

from .errors import UnknownName

__all__ = ["Registry", "load_ref"]

T = TypeVar("T")


def load_ref(ref: str) -> object:
    """Import ``"package.module:attr"`` (``attr`` may be dotted) and return it."""
    module, _, attr = ref.partition(":")
    obj: object = importlib.import_module(module)
    for part in attr.split(".") if attr else ():
        obj = getattr(obj, part)
    return obj


class Registry(Generic[T]):
    """Names (and aliases, never listed by :meth:`names`) to entries of one
    kind, resolved lazily; ``what`` names the kind in errors."""

    def __init__(self, what: str) -> None:
        self.what = what
        self._entries: dict[str, T | str] = {}
        self._aliases: dict[str, str] = {}
        self._lock = threading.Lock()

    def add(self, name: str, entry: T | str, *, aliases: tuple[str, ...] | list[str] = (), lazy: bool = False) -> None:
        """Register ``entry`` under ``name``. With ``lazy=True`` the entry is a
        ``"module:attr"`` reference imported on first :meth:`get`."""
        with self._lock:
            self._entries[name] = f"\0{entry}" if lazy else entry
            self._aliases.pop(name, None)
            for alias in aliases:
                if alias != name:
                    self._aliases[alias] = name

    def remove(self, name: str) -> None:
        """Forget ``name`` and its aliases (a no-op for an unknown name)."""
        with self._lock:
            self._entries.pop(name, None)
            for alias in [a for a, n in self._aliases.items() if n == name]:
                del self._aliases[alias]

    def canonical(self, name: str) -> str:
        """The registered name ``name`` stands for (itself, or what it aliases)."""
        if name in self._entries:
            return name
        target = self._aliases.get(name)
        if target is None:
            lowered = name.lower()
            target = lowered if lowered in self._entries else self._aliases.get(lowered)
        if target is None:
            raise UnknownName(self.what, name, self.names())  # the message sorts them
        return target

    def get(self, name: str) -> T:
        """The entry registered as ``name`` (or an alias of it); imports a lazy
        entry once. :class:`~fidelity.errors.UnknownName` lists the known names."""
        key = self.canonical(name)
        entry = self._entries[key]
        if isinstance(entry, str) and entry.startswith("\0"):
            loaded = load_ref(entry[1:])
            with self._lock:
                self._entries[key] = loaded  # type: ignore[assignment]
            return loaded  # type: ignore[return-value]
        return entry  # type: ignore[return-value]

    def __contains__(self, name: object) -> bool:
        if not isinstance(name, str):
            return False
        try:
            self.canonical(name)
        except UnknownName:
            return False
        return True

    def names(self) -> list[str]:
        """Registered names (aliases excluded), in registration order."""
        return list(self._entries)

    def __iter__(self) -> Iterator[str]:
        return iter(self.names())

    def __len__(self) -> int:
        return len(self._entries)
