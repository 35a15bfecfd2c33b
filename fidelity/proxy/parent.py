"""The seam between the proxy and the cache simulator: which earlier request
does this one read from (:class:`ParentIndex`), and what does that cost
(:func:`judge`, the differ's verdict on a pair)?"""

from __future__ import annotations

import hashlib
from collections import OrderedDict
from dataclasses import dataclass

from .. import wire
from ..cache.items import common_prefix
from ..errors import FidelityError

__all__ = ["Seen", "ParentIndex", "Verdict", "judge", "view_digests", "prompt_tokens"]


@dataclass(frozen=True)
class Seen:
    """One request as the index remembers it."""

    name: str
    dialect: str | None
    model: str | None
    endpoint: str | None
    digests: tuple[bytes, ...]
    #: index of the first segment past the params (cache key) segment
    first_content: int


def view_digests(dialect: str | None, body: bytes, endpoint: str | None = None) -> tuple[tuple[bytes, ...], int]:
    """Digests of the cache-view segments of ``body`` and the index of the
    first segment that is prompt content (past ``params``); ``((), 0)``
    when the body is not a request of a known dialect."""
    if dialect is None:
        return (), 0
    try:
        d = wire.get(dialect)
        segs = wire.cache_view_at(d, body, endpoint)
    except (FidelityError, ValueError, KeyError, TypeError):
        return (), 0
    first = 1 if segs and segs[0].kind == "params" else 0
    return tuple(hashlib.sha256(s.kind.encode() + b"\0" + s.data).digest() for s in segs), first


class ParentIndex:
    """Remembers the segment digests of the last ``limit`` requests and finds
    the one a new request reads from: the same dialect, model and endpoint,
    the longest common prefix in whole segments past the params (ties: the
    most recent). Not thread-safe: the caller serialises calls."""

    def __init__(self, limit: int = 4096) -> None:
        self.limit = limit
        self._seen: OrderedDict[str, Seen] = OrderedDict()

    def __len__(self) -> int:
        return len(self._seen)

    def find(self, req: Seen) -> Seen | None:
        """The earlier request ``req`` reads from, or ``None``."""
        best: Seen | None = None
        best_n = req.first_content  # must share more than the cache key
        for prior in reversed(self._seen.values()):  # most recent first: wins ties
            if prior.dialect != req.dialect or prior.model != req.model or prior.endpoint != req.endpoint:
                continue
            n = common_prefix(prior.digests, req.digests)
            if n > best_n:
                best, best_n = prior, n
        return best

    def observe(self, req: Seen) -> Seen | None:
        """:meth:`find`, then remember ``req`` for later requests."""
        parent = self.find(req)
        self._seen[req.name] = req
        while len(self._seen) > self.limit:
            self._seen.popitem(last=False)
        return parent


@dataclass(frozen=True)
class Verdict:
    """What a child loses against its parent (see :func:`judge`)."""

    cause: str
    detail: str | None
    segment: str | None
    pointer: str | None
    predicted_cached: int
    predicted_written: int
    lost_tokens: int
    usd_lost: float | None
    prompt_tokens: int
    estimated: bool
    #: every break after the first (:func:`fidelity.diff.breaks_of`; 0 when not asked for)
    more_breaks: int = 0
    #: cached tokens a child with every break fixed reads (``None``: not asked for, or no break)
    kept_if_fixed: int | None = None

    def divergence(self) -> str:
        """``system[0] /system/0/text`` or ``none``."""
        if self.segment is None:
            return "none"
        return f"{self.segment} {self.pointer}" if self.pointer else self.segment


def judge(parent_body: bytes, child_body: bytes, dialect: str, *, model: str | None = None,
          endpoint: str | None = None, with_breaks: bool = False, parent_path: str | None = None,
          child_path: str | None = None) -> Verdict:
    """The differ's verdict on a pair (raises :class:`FidelityError` on bodies
    it cannot read, naming ``parent_path`` / ``child_path`` when given).
    ``with_breaks``: count every break and what a fully fixed child keeps."""
    from ..diff import compare, compare_with_breaks
    from ..diff.views import segment_name

    run = compare_with_breaks if with_breaks else compare
    r = run(parent_body, child_body, dialect=dialect, model=model, endpoint=endpoint, parent_path=parent_path,
            child_path=child_path)
    found = r.breaks or ()
    return Verdict(
        cause=r.cause.kind,
        detail=r.cause.detail,
        segment=segment_name(r),
        pointer=r.view.pointer,
        predicted_cached=r.cache.predicted_cached,
        predicted_written=r.cache.written,
        lost_tokens=r.cache.lost,
        usd_lost=None if r.cost is None else r.cost.usd_lost,
        prompt_tokens=r.tokens.child_prompt,
        estimated=r.tokens.estimated,
        more_breaks=max(0, len(found) - 1),
        kept_if_fixed=found[-1].kept if found else None,
    )


def prompt_tokens(body: bytes, dialect: str, model: str | None = None, endpoint: str | None = None) -> int:
    """Prompt tokens of one request as its provider bills them (the one
    builder's, :func:`fidelity.cache.prompts.cache_prompt`)."""
    from ..cache.prompts import cache_prompt

    return len(cache_prompt(body, dialect=dialect, model=model, endpoint=endpoint).request.tokens)
