"""Pair the requests of a snapshot folder by what the cache would read.

:func:`pairs_by_cache` replays the folder in request time order (``time``, then
``seq`` and the file name) through each provider's
:class:`~fidelity.cache.simulator.Simulator` and pairs every request with the
earlier one it reads from; one that reads nothing, with the one sharing its
longest prefix, else its metadata's fork parent, else the previous request of
the same model."""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..cache.prompts import cache_prompt
from ..cache.simulator import Prediction, Simulator
from ..capture import snapshot
from ..errors import FidelityError
from ..traffic.exchange import iso_seconds

__all__ = ["CachePair", "pairs_by_cache", "request_order"]


@dataclass(frozen=True)
class CachePair:
    """A child request, the earlier request it is compared with, and why (``how``:
    ``"reads"``, ``"nearest"``, ``"parent"`` or ``"previous"``; see the module doc)."""

    parent: snapshot.Loaded
    child: snapshot.Loaded
    how: str
    predicted: Prediction | None


def _meta(path: Path) -> dict[str, Any]:
    with open(path, "rb") as fh:
        line = fh.readline(1 << 20)
    if not snapshot.is_snapshot(line):
        return {}
    try:
        meta = json.loads(line)
    except ValueError:
        return {}
    return meta if isinstance(meta, dict) else {}


def request_order(folder: str | Path) -> list[tuple[Path, dict[str, Any]]]:
    """Request files of ``folder`` in request time order (see module docstring)."""
    items = []
    for p in snapshot.iter_folder(folder):
        meta = _meta(p)
        seq = meta.get("seq") if isinstance(meta.get("seq"), int) else None
        items.append((p, meta, iso_seconds(meta.get("time")), seq))
    if items and all(t is not None for _, _, t, _ in items):  # else iter_folder's order: seq, then file name
        items.sort(key=lambda it: (it[2], it[3] if it[3] is not None else 0, snapshot._natural(it[0].name)))  # noqa: SLF001
    return [(p, meta) for p, meta, _, _ in items]


def pairs_by_cache(folder: str | Path, **params: Any) -> Iterator[CachePair]:
    """Every request that has an earlier one to compare with, paired as the
    module docstring says. ``params`` go to the cache models."""
    sims: dict[tuple[str, str], Simulator] = {}
    seen: dict[str, Path] = {}  # label -> path
    last_of_model: dict[tuple[str, str], Path] = {}
    for path, meta in request_order(folder):
        body, snap = snapshot.load_body(path)
        label = str(path)
        pred: Prediction | None = None
        key: tuple[str, str] | None = None
        try:
            cp = cache_prompt(body, dialect=snap.provider if snap else None, model=snap.model if snap else None,
                              time=iso_seconds(meta.get("time")), label=label, path=str(path))
            key = (cp.cache_model, cp.model)
            sim = sims.get(key)
            if sim is None:
                sim = sims[key] = Simulator(cp.cache_model, cp.model, **params)
            pred = sim.feed(cp.request)
        except FidelityError:
            pred = None  # compare() says what is wrong with this body
        other: Path | None = None
        how = ""
        if pred is not None and pred.parent is not None:
            other, how = Path(str(pred.parent)), "reads"
        elif pred is not None and pred.nearest is not None:
            other, how = Path(str(pred.nearest)), "nearest"
        elif isinstance(meta.get("parent"), str) and meta["parent"] and (path.parent / meta["parent"]).exists():
            other, how = path.parent / meta["parent"], "parent"
        elif "parent" in meta and meta["parent"] is None:
            other = None  # a root that pairs with nothing
        elif key is not None and key in last_of_model:
            other, how = last_of_model[key], "previous"
        elif key is None and seen:
            other, how = list(seen.values())[-1], "previous"
        seen[label] = path
        if key is not None:
            last_of_model[key] = path
        if other is not None:
            p_body, p_snap = snapshot.load_body(other)
            yield CachePair(snapshot.Loaded(other, p_body, p_snap), snapshot.Loaded(path, body, snap), how, pred)
