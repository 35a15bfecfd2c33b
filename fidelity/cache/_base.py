"""Shared types and the base class of the cache models: a cache model holds
one provider's rules; the simulator (:mod:`fidelity.cache.simulator`)
applies them and is the only place cached and written tokens are computed.
"""

from __future__ import annotations

from array import array
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from ..bytediff import first_divergence
from ..errors import InputError

__all__ = ["as_token_array", "settle_prompt_fields", "PromptTokens", "common_prefix", "CacheModel"]

#: typecode of packed token ids (signed 64-bit; see ``fidelity.tokens.TOKEN_TYPECODE``)
_TYPECODE = "q"
_ITEM = 8
_INT = frozenset({int})


def as_token_array(ids: Sequence[int]) -> array[int]:
    """``ids`` as ``array('q')``: an ``array('q')`` itself (not copied),
    anything else (tuple, list, range, generator...) packed into a new one."""
    if isinstance(ids, array) and ids.typecode == _TYPECODE:
        return ids
    return array(_TYPECODE, ids)


def settle_prompt_fields(obj: Any) -> None:
    """On a frozen prompt dataclass (:class:`PromptTokens`, the simulator's
    ``SimRequest``): pack ``tokens`` and ``output`` (:func:`as_token_array`),
    make ``breakpoints``, ``ttls`` and ``blocks`` tuples, and check that every
    offset lies in the prompt and that each breakpoint has at most one ttl."""
    for name in ("tokens", "output"):
        object.__setattr__(obj, name, as_token_array(getattr(obj, name)))
    for name in ("breakpoints", "ttls", "blocks"):
        value = getattr(obj, name)
        if not isinstance(value, tuple):
            object.__setattr__(obj, name, tuple(value))
    n = len(obj.tokens)
    for name in ("breakpoints", "blocks"):
        offsets = getattr(obj, name)
        # a request's block ends grow with its history: checked in C (min,
        # max) when they are all ints, walked in order only to name the culprit
        if not offsets or (0 < min(offsets) and max(offsets) <= n and set(map(type, offsets)) <= _INT):
            continue
        for offset in offsets:
            if not 0 < offset <= n:
                raise InputError(f"{name} offset {offset} outside the prompt (1..{n})", pointer=f"/{name}")
    if obj.ttls and len(obj.ttls) != len(obj.breakpoints):
        raise InputError(f"{len(obj.ttls)} ttls for {len(obj.breakpoints)} breakpoints", pointer="/ttls")


@dataclass(frozen=True)
class PromptTokens:
    """One request's prompt as its provider tokenizes it: the fields of the
    simulator's :class:`~fidelity.cache.simulator.SimRequest` but the
    partition key, label and scale. Ids are packed as ``array('q')`` on
    construction (one is adopted without a copy): treat them as read-only.
    """

    tokens: Sequence[int]
    time: float = 0.0
    breakpoints: tuple[int, ...] = ()
    ttls: tuple[float, ...] = ()
    blocks: tuple[int, ...] = ()
    output: Sequence[int] = ()

    def __post_init__(self) -> None:
        settle_prompt_fields(self)

    def __len__(self) -> int:
        return len(self.tokens)

    def __hash__(self) -> int:  # arrays are unhashable: hash the packed ids
        return hash((self.tokens.tobytes(), self.time, self.breakpoints, self.ttls, self.blocks,  # type: ignore[attr-defined]
                     self.output.tobytes()))  # type: ignore[attr-defined]


def common_prefix(a: Sequence[int], b: Sequence[int]) -> int:
    """Length of the longest common prefix of two token sequences, compared
    packed as 64-bit ints a window at a time (no Python loop per token, no
    copy of either whole sequence)."""
    pa = memoryview(as_token_array(a)).cast("B")
    pb = memoryview(as_token_array(b)).cast("B")
    n = min(len(pa), len(pb))
    lo = 0
    while lo < n:
        hi = min(n, lo + _WINDOW)
        window = pa[lo:hi].tobytes()
        if not window.startswith(pb[lo:hi]):
            at = first_divergence(window, pb[lo:hi].tobytes())
            assert at is not None
            return (lo + at) // _ITEM
        lo = hi
    return n // _ITEM


#: bytes compared per step by :func:`common_prefix` (a multiple of 8)
_WINDOW = 1 << 20


class CacheModel:
    """Base of every cache model: one provider's rules, which the simulator
    reads. ``read_multiplier`` / ``write_multiplier``: price of a cached /
    written token relative to input (for reference: cost uses the price
    table). ``ttl``: seconds an entry lives after its last use (``None``: no
    limit). ``includes_output``: whether the reply's tokens stay in the cache
    after the prompt (self-hosted engines, DeepSeek).
    """

    name: str = ""
    provider: str = ""
    doc: str = ""
    read_multiplier: float = 1.0
    write_multiplier: float = 1.0
    ttl: float | None = None
    includes_output: bool = False

    def __init__(self, **overrides: object) -> None:
        for key, value in overrides.items():
            if not hasattr(type(self), key):
                raise TypeError(f"{type(self).__name__} has no setting {key!r}")
            setattr(self, key, value)
        if not self.doc:
            self.doc = (type(self).__doc__ or "").strip()

    def __repr__(self) -> str:
        return f"<CacheModel {self.name}>"

    # -- rules --------------------------------------------------------------
    def reusable(self, common_prefix: int, prompt_len: int) -> int:
        """Tokens of a shared prefix of ``common_prefix`` tokens that the
        cache can serve to a prompt of ``prompt_len`` tokens. Default: all of
        them once they reach the model's ``minimum``."""
        usable = min(common_prefix, prompt_len)
        return usable if usable >= getattr(self, "minimum", 0) else 0

    def longest_ttl(self) -> float | None:
        """The longest an entry can live after its last use (``None``: no
        time limit): after a gap this long in the traffic of one cache,
        nothing it held is alive."""
        return self.ttl

    def kept_output(self, output: Sequence[int]) -> Sequence[int]:
        """The reply tokens the cache holds after the prompt: all of them
        where :attr:`includes_output`, none otherwise."""
        return output if self.includes_output else ()
