"""Gemini implicit caching."""

from __future__ import annotations

from . import minimums
from ._base import CacheModel

__all__ = ["GeminiImplicitCache"]


class GeminiImplicitCache(CacheModel):
    """Gemini implicit caching (on by default for Gemini 2.5 and newer):
    the whole common prefix is served once it reaches the model's minimum
    (dated table); hits are not guaranteed; no step or lifetime is
    documented, so ``ttl`` is an assumed 5 minutes; reads 10% of input, no
    write fee. Source: https://ai.google.dev/gemini-api/docs/caching
    ("Implicit caching").
    """

    name = "gemini"
    provider = "gemini"
    minimum = 1024
    ttl = 300.0
    read_multiplier = 0.1
    write_multiplier = 1.0

    def __init__(self, model: str | None = None, **overrides: object) -> None:
        if model is not None and "minimum" not in overrides:
            overrides["minimum"] = minimums.minimum("gemini", model)  # the dated table's latest
        super().__init__(**overrides)
