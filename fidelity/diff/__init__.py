"""The diff stage: where two requests part, why, and what it costs.

:func:`compare` returns a :class:`DiffResult` (JSON: :meth:`DiffResult.to_json`;
other views: :mod:`.views`). :mod:`.locate` maps a byte to its JSON pointer,
:mod:`.causes` names the change, :mod:`.breaks` lists every break and what
fixing each keeps, :mod:`.lost` counts lost tokens."""

from __future__ import annotations

from ..bytediff import first_divergence
from ._compare import DiffResult, compare, compare_requests, shared_tokens
from .breaks import Break, breaks_of, compare_with_breaks
from .causes import classify

__all__ = [
    "Break",
    "DiffResult",
    "breaks_of",
    "classify",
    "compare",
    "compare_requests",
    "compare_with_breaks",
    "first_divergence",
    "shared_tokens",
]
