"""Every break of a broken request, for a scan's cause tables:
:func:`fidelity.diff.breaks_of` (``fidelity diff``'s fix list) with
``counted=False`` on the segments the scan already holds, so scan and diff
name the same breaks in the same order and only broken requests pay for it."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import orjson

from ..diff import breaks_of
from ..diff.causes import tool_name
from ..errors import FidelityError
from ..wire import Dialect, Segment

__all__ = ["Listed", "fix_list", "body_of", "segment_label"]


@dataclass(frozen=True)
class Listed:
    """One break of a fix list: its cause and detail as ``fidelity diff``
    lists them, the segment kind, the JSON pointer where it sits (in the
    child's body, in the parent's when the break only removes) and the tool
    name or system section of that segment (``""`` for the others)."""

    cause: str
    detail: str
    segment: str
    pointer: str
    label: str


def fix_list(dialect: Dialect, model: str, parent: bytes, child: bytes,
             p_segs: Sequence[Segment], c_segs: Sequence[Segment]) -> list[Listed]:
    """The breaks of ``child`` against ``parent`` in cache order, aligned on
    the cache views the scan built of the two bodies (``p_segs``,
    ``c_segs``: the dialect's segments, each value's bytes as the scan
    normalised them); empty when they cannot be listed."""
    try:
        found = breaks_of(parent, child, dialect=dialect.name, model=model, views=(p_segs, c_segs), counted=False)
    except (FidelityError, ValueError, TypeError, KeyError, IndexError):
        return []
    return [Listed(b.kind, b.detail, b.segment, b.pointer,
                   _label(p_segs if b.side == "parent" else c_segs, b.pointer)) for b in found]


def body_of(rec: Any) -> bytes:
    """A log record's body bytes: as logged when the line holds them as
    text, else its parsed body serialised (the bytes the scan's segments were
    made from)."""
    return rec.raw_body if rec.raw_body is not None else orjson.dumps(rec.body)


def _label(segs: Sequence[Segment], pointer: str) -> str:
    """:func:`segment_label` of the deepest segment holding ``pointer``."""
    best: Segment | None = None
    for seg in segs:
        p = seg.pointer
        if (pointer == p or pointer.startswith(p + "/")) and (best is None or len(p) > len(best.pointer)):
            best = seg
    return "" if best is None else segment_label(best)


def segment_label(seg: Segment) -> str:
    """A segment's tool name or system section (``""`` for the others)."""
    if seg.kind == "tools":
        return tool_name(seg.data) or ""
    if seg.kind == "system":
        return f"system[{seg.index}]"
    return ""
