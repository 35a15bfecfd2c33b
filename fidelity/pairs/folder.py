"""Diff one (parent, child) pair of recorded requests, or say why not.

:func:`compare_pair` detects each request's dialect and model
(:func:`fidelity.wire.evidence.detect_request`) and compares; in a folder
(``lenient=True``) a pair it cannot compare (embeddings, an API fidelity does
not render) becomes a :class:`Skipped` with a reason, counted by :func:`summary`."""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Iterable
from contextlib import AbstractContextManager, nullcontext
from dataclasses import dataclass
from typing import Any

from .. import jsonio
from ..capture.classify import classify
from ..diff import DiffResult, compare, compare_with_breaks
from ..errors import InputError
from ..providers import placed_url
from ..traffic.exchange import iso_seconds

__all__ = ["Skipped", "compare_pair", "summary", "describe_request"]


@dataclass(frozen=True)
class Skipped:
    """A pair that was not compared, and why (a short reason, counted)."""

    parent: str
    child: str
    reason: str
    #: (request, reason) for each request the pair could not use
    culprits: tuple[tuple[str, str], ...] = ()


def describe_request(path: str, body: bytes, meta: Any, *, provider: str | None = None) -> tuple[Any, str | None]:
    """``(Detection, None)`` for a model request, or ``(None, reason)``."""
    from ..wire.evidence import detect_request

    if meta is not None:
        kind = classify(meta.method, meta.url, dict(meta.headers), body)
        if not kind.generation:
            return None, kind.reason
    obj = jsonio.loads(body, path=path)  # the one strict parser: its error names the file and the problem
    found = detect_request(obj, url=getattr(meta, "url", None), meta_dialect=getattr(meta, "provider", None),
                           meta_model=getattr(meta, "model", None), override=provider, path=path)
    if not found.supported:
        return None, f"unsupported API ({found.dialect})"
    return found, None


def compare_pair(parent: Any, child: Any, *, provider: str | None = None, model: str | None = None,
                 prices: Any = None, lenient: bool = False, notes: list[str] | None = None,
                 endpoint: str | None = None, at: Any = None, with_breaks: bool = False) -> DiffResult | Skipped:
    """Compare two :class:`~fidelity.capture.snapshot.Loaded` requests, the model from
    ``model``, else the body, the snapshot metadata, the URL (``lenient``: a pair that cannot
    be compared is a :class:`Skipped`, not an :class:`InputError`; ``endpoint``: default the
    parent snapshot's URL; ``at``: when the child is sent; ``with_breaks``: every break)."""
    p_name, c_name = str(parent.path), str(child.path)
    # a file that is not valid JSON is bad input, in a folder too (one line, exit 2);
    # each body is parsed here once, and the parse is handed on (jsonio.parsed_once)
    parsed: list[Any] = [
        jsonio.loads(loaded.body, path=name) if loaded.meta is None
        or classify(loaded.meta.method, loaded.meta.url, dict(loaded.meta.headers), loaded.body).generation else None
        for name, loaded in ((p_name, parent), (c_name, child))]
    try:
        with _given(parent.body, parsed[0]), _given(child.body, parsed[1]):
            p_found, p_why = describe_request(p_name, parent.body, parent.meta, provider=provider)
            c_found, c_why = describe_request(c_name, child.body, child.meta, provider=provider)
        why = p_why or c_why
        if why is not None:
            if not lenient:
                raise InputError(f"not a model request fidelity compares: {why}", path=p_name if p_why else c_name)
            culprits = tuple((n, w) for n, w in ((p_name, p_why), (c_name, c_why)) if w is not None)
            return Skipped(p_name, c_name, why, culprits)
        assert p_found is not None and c_found is not None
        if notes is not None:
            for name, found in ((p_name, p_found), (c_name, c_found)):
                if found.conflict:
                    notes.append(f"{name}: {found.conflict}")
        if p_found.dialect != c_found.dialect and not provider and not _fits(p_found.dialect, child.body):
            msg = f"parent speaks {p_found.dialect}, child {c_found.dialect}"
            if not lenient:
                raise InputError(f"child body is not a {p_found.dialect} request like its parent ({msg})", path=c_name)
            reason = "parent and child speak different dialects"
            return Skipped(p_name, c_name, reason, ((c_name, reason),))
        chosen = model or p_found.model or c_found.model
        # handed over: compare's own parse takes each value and drops it when
        # its cache view is built (so large trees are not held while tokenizing)
        with _given(parent.body, parsed[0], once=True), _given(child.body, parsed[1], once=True):
            parsed.clear()
            run = compare_with_breaks if with_breaks else compare
            return run(parent.body, child.body, dialect=p_found.dialect, model=chosen, prices=prices,
                       parent_path=p_name, child_path=c_name,
                       endpoint=endpoint or placed_url(getattr(parent.meta, "url", None)), at=at,
                       times=_times(parent.meta, child.meta))
    except InputError as exc:
        if not lenient:
            raise
        return Skipped(p_name, c_name, exc.problem)


def _times(p_meta: Any, c_meta: Any) -> tuple[float, float] | None:
    """When the two snapshots were sent, where both say so (their ``time`` metadata)."""
    got = [iso_seconds(t) if isinstance(t := getattr(m, "time", None), str) else None for m in (p_meta, c_meta)]
    return (got[0], got[1]) if got[0] is not None and got[1] is not None else None


def _given(body: bytes, value: Any, *, once: bool = False) -> AbstractContextManager[None]:
    """:func:`jsonio.parsed_once` for a body parsed above (nothing when it was not)."""
    return nullcontext() if value is None else jsonio.parsed_once(body, value, once=once)


def _fits(dialect: str, body: bytes) -> bool:
    """Can ``body`` be read as a ``dialect`` request (a plain Chat body fits
    every Chat-shaped dialect)?"""
    from .. import wire

    try:
        return bool(wire.get(dialect).detect(json.loads(body.decode("utf-8", "surrogatepass"))))
    except (ValueError, UnicodeDecodeError, RecursionError):
        return False


def summary(skipped: Iterable[Skipped]) -> str | None:
    """One line: how many pairs were not compared, and the requests that caused
    it counted once each by reason (``None`` when none)."""
    skipped = list(skipped)
    if not skipped:
        return None
    seen: dict[tuple[str, str], None] = {}
    for s in skipped:
        for culprit in s.culprits or ((f"{s.parent} -> {s.child}", s.reason),):
            seen.setdefault(culprit, None)
    counts = Counter(reason for _, reason in seen)
    parts = [f"{reason}: {k}" for reason, k in sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))]
    return f"skipped {len(skipped)} pair(s) not compared; requests by reason: " + "; ".join(parts)
