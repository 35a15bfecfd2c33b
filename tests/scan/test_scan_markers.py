"""The scan matches Anthropic segments without their ``cache_control``
markers by stripping them from the segment's compact bytes
(:func:`fidelity.cache.anthropic_blocks.strip_markers`, the one stripper):
on any JSON value those bytes are the compact bytes of the value with
every ``cache_control`` member removed, at any depth."""

from __future__ import annotations

from typing import Any

from hypothesis import given
from hypothesis import strategies as st

from fidelity.cache.anthropic_blocks import strip_markers
from fidelity.cache.items import dumps_value

_KEYS = st.sampled_from(["cache_control", "type", "text", "a", "cache_controls", "x_cache_control"])
_SCALARS = st.none() | st.booleans() | st.integers(-(2**63), 2**63 - 1) | st.floats(allow_nan=False,
                                                                                      allow_infinity=False) \
    | st.text(max_size=8) | st.sampled_from(["cache_control", '"cache_control":', "{,}"])
_VALUES = st.recursive(_SCALARS, lambda inner: st.lists(inner, max_size=4) | st.dictionaries(_KEYS, inner, max_size=4),
                       max_leaves=20)


def _without(value: Any) -> Any:
    """The value with its ``cache_control`` members removed (the rule, on parsed values)."""
    if isinstance(value, dict):
        return {k: _without(v) for k, v in value.items() if k != "cache_control"}
    if isinstance(value, list):
        return [_without(v) for v in value]
    return value


@given(_VALUES)
def test_stripping_bytes_is_stripping_the_value(value: Any) -> None:
    assert strip_markers(dumps_value(value)) == dumps_value(_without(value))


def test_a_marker_in_a_text_is_kept() -> None:
    seg = dumps_value({"type": "text", "text": '"cache_control": {"type": "ephemeral"}',
                       "cache_control": {"type": "ephemeral"}})
    assert strip_markers(seg) == b'{"type":"text","text":"\\"cache_control\\": {\\"type\\": \\"ephemeral\\"}"}'
