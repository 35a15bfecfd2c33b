"""The diff stage: where two requests part, why, and what it costs.

:func:`compare` returns a :class:`DiffResult` (JSON: :meth:`DiffResult.to_json`;
other views: :mod:`.views`). :mod:`.locate` maps a byte to its JSON pointer,
:mod:`.causes` names the change, :mod:`.breaks` lists every break and what
fixing each keeps, :mod:`.lost` counts lost tokens."""

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
    "shared_tokens",
]
