"""Anthropic prompt caching (explicit ``cache_control`` breakpoints)."""

from __future__ import annotations

from . import minimums
from ._breakpoints import BreakpointCache

__all__ = ["ANTHROPIC_MINIMUMS", "anthropic_minimum", "AnthropicCache"]

#: Minimum cacheable prompt length per model: the latest figures of the dated
#: table ``fidelity/data/cache_minimums.json`` (see :mod:`fidelity.cache.minimums`,
#: which keeps each figure's source and date).
ANTHROPIC_MINIMUMS: tuple[tuple[str, int], ...] = tuple(dict.fromkeys(
    (r.model, minimums.minimum("anthropic", r.model)) for r in minimums.rows() if r.provider == "anthropic"))


def anthropic_minimum(model: str | None, default: int = 1024) -> int:
    """The model's minimum from the dated table (latest figure)."""
    return minimums.minimum("anthropic", model, default)


class AnthropicCache(BreakpointCache):
    """Anthropic prompt caching.

    Rules (https://platform.claude.com/docs/en/build-with-claude/prompt-caching):

    * The cache key is the prompt prefix in the order tools, system,
      messages, up to and including a block marked ``cache_control``; at most
      4 breakpoints per request (more is an error). A top-level
      ``cache_control`` ("automatic caching") puts one breakpoint on the last
      cacheable block.
    * On a request the system checks, for each breakpoint, the prefix ending
      there and, failing that, the prefixes ending at up to 20 blocks before
      it ("lookback"); the longest stored match is read.
    * A prefix shorter than the model's minimum (1024 / 2048 / 4096 tokens,
      the dated table in ``fidelity/data/cache_minimums.json``) is not cached.
    * Entries live 5 minutes, refreshed at each use; ``"ttl": "1h"`` keeps
      them an hour.
    * Prices relative to base input: write 1.25x (5-minute entry) or 2x
      (1-hour entry), read 0.1x (https://platform.claude.com/docs/en/about-claude/pricing).

    ``written`` counts tokens from the read point to the last breakpoint
    (``cache_creation_input_tokens``); tokens after it are plain input.
    """

    name = "anthropic"
    provider = "anthropic"
    minimum = 1024
    max_breakpoints = 4
    lookback = 20
    ttl = 300.0
    read_multiplier = 0.1
    write_multiplier = 1.25
    write_multipliers = {300.0: 1.25, 3600.0: 2.0}

    def __init__(self, model: str | None = None, **overrides: object) -> None:
        if model is not None and "minimum" not in overrides:
            overrides["minimum"] = anthropic_minimum(model)
        super().__init__(**overrides)
