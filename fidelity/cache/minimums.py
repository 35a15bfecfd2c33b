"""The dated table of minimum cacheable prompt lengths
(``fidelity/data/cache_minimums.json``): every dated figure with its source;
a lookup takes the latest one, or the one in force on a given date.
The figures and their history: docs/tokens-cache-prices.md.

>>> from fidelity.cache import minimums
>>> minimums.minimum("anthropic", "claude-sonnet-4-6-20260217", on="2026-03-01")
2048
"""

from __future__ import annotations

import datetime as _dt
import re
from dataclasses import dataclass
from functools import lru_cache
from importlib import resources

from .. import jsonio
from ..errors import InputError

__all__ = ["MinimumRow", "rows", "row", "minimum"]

_PATH = "fidelity/data/cache_minimums.json"
# a model name's tail that does not change the figure: a date, -latest, -preview, -exp, a version tag
_NEUTRAL_TAIL = re.compile(r"^(?:\d[\d-]*|latest|preview(?:-[\w-]+)?|exp(?:-[\d-]+)?|v\d+(?:\.\d+)*)$")


@dataclass(frozen=True)
class MinimumRow:
    """One dated figure: ``minimum`` tokens for ``model`` per ``source`` as of ``as_of``."""

    provider: str
    model: str
    minimum: int
    as_of: str
    source: str
    note: str = ""


@lru_cache(maxsize=1)
def rows() -> tuple[MinimumRow, ...]:
    """Every row of the bundled table, in file order."""
    data = resources.files("fidelity").joinpath("data", "cache_minimums.json").read_bytes()
    doc = jsonio.loads(data, path=_PATH)
    out = []
    for i, r in enumerate(doc.get("rows", ()) if isinstance(doc, dict) else ()):
        try:
            out.append(MinimumRow(str(r["provider"]), str(r["model"]), int(r["minimum"]), str(r["as_of"]),
                                  str(r["source"]), str(r.get("note", ""))))
            _dt.date.fromisoformat(r["as_of"])
        except (KeyError, TypeError, ValueError):
            raise InputError("a row needs provider, model, minimum, an ISO as_of and source", path=_PATH,
                             pointer=f"/rows/{i}") from None
    return tuple(out)


def _matches(name: str, model: str) -> bool:
    return model == name or (model.startswith(name) and model[len(name)] in "-@:."
                             and bool(_NEUTRAL_TAIL.match(model[len(name) + 1:])))


def row(provider: str, model: str | None, on: str | _dt.date | None = None) -> MinimumRow | None:
    """The figure for ``model`` (the longest matching model name of that
    provider), the latest one dated on or before ``on`` (default: the
    latest); ``None`` when the table has none."""
    key = (model or "").strip().lower().rsplit("/", 1)[-1]
    limit = on.isoformat() if isinstance(on, _dt.date) else on
    found = [r for r in rows() if r.provider == provider and _matches(r.model, key)
             and (limit is None or r.as_of <= limit)]
    if not found:
        return None
    longest = max(len(r.model) for r in found)
    return max((r for r in found if len(r.model) == longest), key=lambda r: r.as_of)


def minimum(provider: str, model: str | None, default: int = 1024, on: str | _dt.date | None = None) -> int:
    """:func:`row`'s figure, or ``default`` when the table has none."""
    r = row(provider, model, on)
    return r.minimum if r is not None else default
