"""The diff stage: where two requests part, why, and what it costs.

``compare(parent_body, child_body)`` is the entry point; its result,
:class:`DiffResult`, has one JSON view (:meth:`DiffResult.to_json`) and the
console/plain-text views live in :mod:`fidelity.diff.views`.

Submodules: :mod:`~fidelity.bytediff` (first divergent byte, a ground-floor module),
:mod:`~fidelity.diff.locate` (JSON pointer of a byte offset),
:mod:`~fidelity.diff.causes` (what kind of change broke the prefix),
:mod:`~fidelity.diff.breaks` (every break, and what fixing each keeps:
``breaks_of(parent, child) -> list[Break]``, for the proxy, gate and scan
to call).
"""

from __future__ import annotations

from ..bytediff import excerpt, first_divergence
from ._compare import (
    SCHEMA,
    CacheFigures,
    CostFigures,
    DiffResult,
    RawDiff,
    TokenFigures,
    ViewDiff,
    compare,
    compare_requests,
    prompt_token_ids,
    shared_tokens,
)
from .breaks import Break, breaks_of, compare_with_breaks
from .causes import Cause, classify
from .locate import pointer_at

__all__ = [
    "SCHEMA",
    "Break",
    "breaks_of",
    "compare_with_breaks",
    "CacheFigures",
    "Cause",
    "CostFigures",
    "DiffResult",
    "RawDiff",
    "TokenFigures",
    "ViewDiff",
    "classify",
    "compare",
    "compare_requests",
    "excerpt",
    "first_divergence",
    "pointer_at",
    "prompt_token_ids",
    "shared_tokens",
]
