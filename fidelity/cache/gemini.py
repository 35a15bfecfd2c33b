"""Gemini implicit caching."""

from __future__ import annotations

from ._base import CacheModel

__all__ = ["GEMINI_MINIMUMS", "gemini_minimum", "GeminiImplicitCache"]

#: Minimum input tokens for implicit caching per model family, from the table
#: in https://ai.google.dev/gemini-api/docs/caching ("Implicit caching"):
#: Gemini 3 Flash 1024, Gemini 3 Pro 4096, Gemini 2.5 Flash 1024, Gemini 2.5 Pro 4096.
GEMINI_MINIMUMS: tuple[tuple[str, int], ...] = (
    ("gemini-3-pro", 4096),
    ("gemini-3.1-pro", 4096),
    ("gemini-3-flash", 1024),
    ("gemini-2.5-pro", 4096),
    ("gemini-2.5-flash", 1024),
)


def gemini_minimum(model: str | None, default: int = 1024) -> int:
    key = (model or "").lower().rsplit("/", 1)[-1]
    for prefix, minimum in GEMINI_MINIMUMS:
        if key.startswith(prefix):
            return minimum
    return default


class GeminiImplicitCache(CacheModel):
    """Gemini implicit caching (on by default for Gemini 2.5 and newer).

    Rules (https://ai.google.dev/gemini-api/docs/caching, "Implicit
    caching"): automatic, prefix based ("put large and common contents at
    the beginning of your prompt"); a per-model minimum input (1024 tokens
    for Flash, 4096 for Pro, see ``GEMINI_MINIMUMS``); hits are not
    guaranteed and no step size or lifetime is documented, so the model
    serves the whole common prefix when it reaches the minimum and assumes a
    5-minute lifetime (``ttl``, an assumption: the page only says to "send
    requests with similar prefix in a short amount of time"). Cached tokens
    are billed at 10% of input on Gemini 2.5 and 3 (price table), no write
    fee for implicit caching.
    """

    name = "gemini"
    provider = "gemini"
    minimum = 1024
    ttl = 300.0
    read_multiplier = 0.1
    write_multiplier = 1.0

    def __init__(self, model: str | None = None, **overrides: object) -> None:
        if model is not None and "minimum" not in overrides:
            overrides["minimum"] = gemini_minimum(model)
        super().__init__(**overrides)

    def reusable(self, common_prefix: int, prompt_len: int) -> int:
        usable = min(common_prefix, prompt_len)
        return usable if usable >= self.minimum else 0
