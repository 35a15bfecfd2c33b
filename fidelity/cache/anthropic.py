"""Anthropic prompt caching (explicit ``cache_control`` breakpoints)."""

from __future__ import annotations

from . import minimums
from ._breakpoints import BreakpointCache

__all__ = ["AnthropicCache"]


class AnthropicCache(BreakpointCache):
    """Anthropic prompt caching: only prefixes ending at a ``cache_control``
    breakpoint (at most 4; a top-level one marks the last cacheable block)
    are written; a request reads the longest stored prefix ending at one of
    its breakpoints or up to 20 blocks before it; prefixes under the model's
    minimum are not cached; entries live 5 minutes (``"ttl": "1h"``: an
    hour), refreshed on use; write 1.25x (2x for 1 h), read 0.1x.
    ``written`` counts tokens from the read point to the last breakpoint.

    Sources: https://platform.claude.com/docs/en/build-with-claude/prompt-caching,
    https://platform.claude.com/docs/en/about-claude/pricing.
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
            overrides["minimum"] = minimums.minimum("anthropic", model)  # the dated table's latest
        super().__init__(**overrides)
