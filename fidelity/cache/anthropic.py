"""Anthropic prompt caching (explicit ``cache_control`` breakpoints)."""

from __future__ import annotations

from ._breakpoints import BreakpointCache

__all__ = ["ANTHROPIC_MINIMUMS", "anthropic_minimum", "AnthropicCache"]

#: Minimum cacheable prompt length per model, from the table "Cache
#: limitations" in https://platform.claude.com/docs/en/build-with-claude/prompt-caching
#: (also quoted at https://docs.orq.ai/docs/proxy/prompt-caching): 4096 for
#: Claude Opus 4.6 / 4.5 and Haiku 4.5; 2048 for Sonnet 4.6 and Haiku 3.5 / 3;
#: 1024 for Sonnet 4.5 / 4, Opus 4.1 / 4 and Sonnet 3.7. Opus 4.7: 2048
#: according to https://dev.to/creeta/claudes-prompt-cache-fails-silently-below-1024-tokens-1ch1
#: (secondary source, not verified on Anthropic's page). First match wins.
ANTHROPIC_MINIMUMS: tuple[tuple[str, int], ...] = (
    ("claude-opus-4-7", 2048),
    ("claude-opus-4-6", 4096),
    ("claude-opus-4-5", 4096),
    ("claude-haiku-4-5", 4096),
    ("claude-sonnet-4-6", 2048),
    ("claude-3-5-haiku", 2048),
    ("claude-3-haiku", 2048),
    ("claude-haiku-3", 2048),
    ("claude-sonnet-4-5", 1024),
    ("claude-sonnet-4", 1024),
    ("claude-opus-4-1", 1024),
    ("claude-opus-4", 1024),
    ("claude-3-7-sonnet", 1024),
)


def anthropic_minimum(model: str | None, default: int = 1024) -> int:
    key = (model or "").lower().rsplit("/", 1)[-1]
    for prefix, minimum in ANTHROPIC_MINIMUMS:
        if key.startswith(prefix):
            return minimum
    return default


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
      ``ANTHROPIC_MINIMUMS``) is not cached.
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
