"""Anthropic's cache invalidation table: which request settings invalidate
which cache level (tools -> system -> messages; a change invalidates its
level and every later one). Read by the simulator's Anthropic prompt
builder (:mod:`fidelity.cache.assemble`) and by the differ.

Source: https://docs.anthropic.com/en/docs/build-with-claude/prompt-caching,
table "What invalidates the cache" (read 2026-11); docs/diff-lost.md.
"""

from __future__ import annotations

__all__ = ["LEVELS", "ANTHROPIC_INVALIDATES", "IMAGES", "IMAGES_LEVEL", "invalidated_levels", "describe"]

#: Anthropic's cache levels, in prefix order.
LEVELS: tuple[str, ...] = ("tools", "system", "messages")

#: Top-level request member -> the first cache level a change of it
#: invalidates (that level and every later one are lost).
ANTHROPIC_INVALIDATES: dict[str, str] = {
    "tool_choice": "messages",
    "thinking": "messages",
    "output_config": "messages",
    "output_format": "messages",  # the earlier spelling of output_config.format
    "speed": "system",
}

#: Name of the pseudo-setting "number of images in the messages", and the
#: first level a change of it invalidates (adding or removing an image: the
#: messages cache only).
IMAGES = "images"
IMAGES_LEVEL = "messages"


def invalidated_levels(key: str) -> tuple[str, ...] | None:
    """The cache levels a change of the top-level member ``key`` invalidates
    (``None``: not in the table; ``"images"``: the image count)."""
    first = ANTHROPIC_INVALIDATES.get(key) if key != IMAGES else IMAGES_LEVEL
    return None if first is None else LEVELS[LEVELS.index(first):]


def describe(key: str) -> str | None:
    """One clause for a diff: what a change of ``key`` invalidates, e.g.
    ``"invalidates the messages cache only; the tools and system caches
    stay"`` (``None`` when ``key`` is not in the table)."""
    levels = invalidated_levels(key)
    if levels is None:
        return None
    kept = [lv for lv in LEVELS if lv not in levels]
    lost = " and ".join(levels)
    only = " only" if len(levels) == 1 else ""
    plural = "s" if len(levels) > 1 else ""
    text = f"invalidates the {lost} cache{plural}{only}"
    if kept:
        text += f"; the {' and '.join(kept)} cache{'s' if len(kept) > 1 else ''} stay{'' if len(kept) > 1 else 's'}"
    return text
