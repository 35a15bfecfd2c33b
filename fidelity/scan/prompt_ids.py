"""Each request's cache simulator input, the same
:class:`~fidelity.cache.simulator.SimRequest` that ``fidelity replay`` feeds:
:func:`fidelity.cache.prompts.cache_prompt` on the request's exact bytes, so
scan and replay count billed token ids through one function (the differ's
:func:`fidelity.diff.prompt_token_ids`, memoised there per prompt and per
content block).

An earlier version rebuilt the ids element by element from the scan's own
memo; it mirrored the plain per-segment token counts and was removed when
the simulator moved to billed counts (OpenAI framing, calibrated Claude and
Gemini estimates, media by rule). Rebuilding that fast path over billed ids
is the next speed step (docs/scan.md).
"""

from __future__ import annotations

from collections.abc import Hashable
from dataclasses import replace
from typing import Any

import orjson

from .. import tokens
from ..cache.prompts import cache_prompt
from ..cache.simulator import SimRequest
from .memo import TokenMemo

__all__ = ["PromptIds"]


class PromptIds:
    """Builds each request's :class:`SimRequest` for one partition."""

    def __init__(self, tokenizer: tokens.Tokenizer, memo: TokenMemo) -> None:
        self.tok = tokenizer
        self.memo = memo
        #: requests built (every one goes through ``cache_prompt``)
        self.slow = 0

    def build(self, rec: Any, items: Any, shared: int, time: float | None,
              label: Hashable) -> tuple[str, SimRequest]:
        """The cache model name and the simulator request of ``rec``
        (``items`` and ``shared`` describe its fast view; unused here)."""
        self.slow += 1
        body = rec.raw_body if rec.raw_body is not None else orjson.dumps(rec.body)
        cp = cache_prompt(body, dialect=rec.dialect.name, model=rec.model, time=time, label=label,
                          endpoint=rec.url or None)
        return cp.cache_model, replace(cp.request, key="")
