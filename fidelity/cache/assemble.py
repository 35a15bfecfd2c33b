"""A :class:`SimRequest` from each part's billed ids, the step every builder
of the simulator's input ends with: :func:`generic_assemble` (segments
joined, block ends and DashScope's explicit breakpoints at segment ends, the
reply priming appended) and :func:`anthropic_assemble` (levels in cache
order, the invalidation table's settings folded in as salts, breakpoints
and lifetimes from ``cache_control``). Both resume from the previous
request's :class:`Assembled` state (docs/builder.md, "Assembly").
"""

from __future__ import annotations

import hashlib
import threading
from array import array
from bisect import bisect_left
from collections import deque
from collections.abc import Hashable, Sequence
from dataclasses import dataclass, field
from itertools import compress, count
from operator import is_not
from typing import Any

from .. import tokens
from .invalidation import ANTHROPIC_INVALIDATES, IMAGES_LEVEL
from .items import common_prefix
from .simulator import SimRequest

__all__ = ["Assembled", "generic_assemble", "generic_request", "anthropic_assemble", "anthropic_images",
           "ttl_seconds", "level_starts"]


#: Lifetimes Anthropic documents for ``cache_control.ttl`` (seconds).
_TTLS = {"5m": 300.0, "1h": 3600.0}


def ttl_seconds(cache_control: Any, default: float = 300.0) -> float:
    """Seconds an entry written under this ``cache_control`` value lives."""
    if isinstance(cache_control, dict):
        ttl = cache_control.get("ttl")
        if isinstance(ttl, str):
            return _TTLS.get(ttl, default)
    return default


def _salt(value: bytes) -> int:
    """A large id that no tokenizer produces, derived from ``value``."""
    # 40 bits shifted past every tokenizer's ids (< 2**32, CRC-32 estimates
    # included): the XOR stays below 2**63, inside array('q')
    return (int.from_bytes(hashlib.blake2b(value, digest_size=5).digest(), "big") | 1) << 22


def generic_request(kinds: Sequence[str], ids: Sequence[array[int]], tail: array[int], time: float | None,
                    label: Hashable | None, output: Sequence[int] = (), key: Hashable = b"",
                    marked: Sequence[bool] | None = None) -> SimRequest:
    """:func:`generic_assemble` resumed from the recent assembly that shares
    the most leading ids arrays (by identity) with this request, so an ids
    array must not change once given. ``marked``: DashScope explicit
    caching, per segment whether it carries a marker (``None``: implicit)."""
    n = min(len(kinds), len(ids))
    prev, same = _recent(ids, n)
    req, state = generic_assemble(kinds, ids, tail, time, label, output, key, marked, prev, same)
    with _RECENT_LOCK:
        _RECENT.append(state)
    return req


#: the last few :func:`generic_request` assemblies (each holds its ids
#: arrays, so that no other object takes their identity while it is here)
_RECENT: deque[Assembled] = deque(maxlen=8)
_RECENT_LOCK = threading.Lock()


def _recent(ids: Sequence[array[int]], n: int) -> tuple[Assembled | None, int]:
    """Of :data:`_RECENT`, the assembly whose leading parts are the most
    leading ``ids`` (the very objects), and how many; ``(None, 0)`` when
    none shares the first."""
    with _RECENT_LOCK:
        recent = list(_RECENT)
    best, most = None, 0
    for state in reversed(recent):  # the latest first: ties go to it
        parts = state.parts
        if not n or not parts or parts[0] is not ids[0]:
            continue
        shared = _same_parts(ids, parts, n)
        if shared > most:
            best, most = state, shared
            if shared == n:
                break
    return best, most


@dataclass
class Assembled:
    """What an assembled request leaves for the next one of its session, which
    copies the prompt of the parts both share instead of walking them again.

    ``parts``: each part as given (compared by identity); ``tokens``: the
    prompt (read-only); per part ``i``, ``starts[i]`` is the token offset
    where it begins and ``n_ends[i]`` / ``n_marks[i]`` how many block ends
    and breakpoints come before it; ``mods``: how Anthropic parts were
    changed (a cut, joined pieces, a salt); ``head``: the ids ahead of the
    first part; ``kinds`` and ``flags``: each part's kind and DashScope
    marker flag."""

    parts: list[Any]
    tokens: array[int]
    starts: list[int]
    n_ends: list[int]
    ends: list[int]
    n_marks: list[int]
    marks: list[Any]
    kinds: list[Any] = field(default_factory=list)
    mods: dict[int, Any] = field(default_factory=dict)
    head: Any = None
    flags: list[bool] | None = None
    #: Anthropic: the params ids, model and tool-prompt cut the head and cut came from
    params: Any = None
    model: str = ""
    cut: int = 0


def _same_parts(parts: Sequence[Any], prev: Sequence[Any], same: int) -> int:
    """How many of the first ``same`` ``parts`` are the very objects of ``prev`` (counted in C)."""
    same = max(0, min(same, len(parts), len(prev)))
    return next(compress(count(), map(is_not, parts[:same], prev[:same])), same)


def _resume(prev: Assembled, j: int) -> tuple[Any, ...]:
    """The first ``j`` parts of ``prev``'s assembled prompt: its ids, block
    ends and marks up to there, and the per-part offsets into them."""
    return (prev.tokens[: prev.starts[j]], prev.ends[: prev.n_ends[j]], prev.marks[: prev.n_marks[j]],
            prev.starts[: j + 1], prev.n_ends[: j + 1], prev.n_marks[: j + 1])


def generic_assemble(kinds: Sequence[str], ids: Sequence[array[int]], tail: array[int], time: float | None,
                     label: Hashable | None, output: Sequence[int] = (), key: Hashable = b"",
                     marked: Sequence[bool] | None = None, prev: Assembled | None = None,
                     same: int = 0) -> tuple[SimRequest, Assembled]:
    """A non-Anthropic :class:`SimRequest` from each segment's kind and ids,
    and its :class:`Assembled` state: with ``prev``, the leading parts that
    are ``prev``'s own (the same ids objects, kinds and marks; at most
    ``same``) are copied from its prompt."""
    kinds = list(kinds)
    flags = list(marked) if marked is not None else None
    n = min(len(kinds), len(ids))
    j = 0
    if prev is not None and same:
        j = _same_parts(ids, prev.parts, same)
        j = common_prefix(kinds[:j], prev.kinds[:j])
        if flags is not None or prev.flags is not None:
            j = common_prefix(flags[:j], prev.flags[:j]) if flags is not None and prev.flags is not None else 0
    if j:
        flat, ends, marks, starts, n_ends, n_marks = _resume(prev, j)  # type: ignore[arg-type]
    else:
        flat = array(tokens.TOKEN_TYPECODE)
        ends, marks, starts, n_ends, n_marks = [], [], [0], [0], [0]
    for i in range(j, n):
        flat.extend(ids[i])
        if kinds[i] != "params" and len(flat) and (not ends or ends[-1] != len(flat)):
            ends.append(len(flat))
            if flags is not None and flags[i]:
                marks.append(len(flat))
        starts.append(len(flat))
        n_ends.append(len(ends))
        n_marks.append(len(marks))
    # the reply priming the provider appends after the last message (OpenAI: 3)
    flat.extend(tail)
    explicit = marked is not None
    req = SimRequest(flat, time, tuple(marks), (), tuple(ends) if explicit else (), output, key, label)
    state = Assembled(list(ids[:n]), flat, starts, n_ends, ends, n_marks, marks, kinds[:n], flags=flags)
    return req, state


def _run(ids: Sequence[int], value: int) -> int:
    """How many leading ids equal ``value``."""
    n = 0
    while n < len(ids) and ids[n] == value:  # runs are short (a few hundred ids at most)
        n += 1
    return n


def _tool_prompt_moved(model: str, tools_ids: Sequence[int]) -> int:
    """How many tokens of the tool-use prompt's estimate leading the first
    tool's ids depend on ``tool_choice`` (above the smallest count any choice
    gives, :func:`fidelity.tokens.framing_estimate.anthropic_tool_prompt`)."""
    from ..tokens.framing_estimate import DOC, anthropic_tool_prompt

    n = _run(tools_ids, DOC.id)
    if not n:
        return 0
    shared = min(anthropic_tool_prompt(model, choice) for choice in (None, {"type": "any"}))
    return max(0, n - shared)


#: Anthropic's levels in cache order
_RANK = {"tools": 0, "system": 1, "messages": 2}


def _rank(block: tuple[str, Any, Any]) -> int:
    return _RANK[block[0]]


def level_starts(asm: Assembled) -> tuple[int, int, int]:
    """Token offsets where the tools, system and messages levels start in an
    assembled Anthropic prompt (:func:`anthropic_assemble`'s state): where
    the first part of that level or a later one begins (a level absent
    starts where the next does)."""
    parts, starts = asm.parts, asm.starts
    at = [bisect_left(parts, rank, key=_rank) for rank in range(3)]
    return starts[at[0]], starts[at[1]], starts[at[2]]


def anthropic_images(messages: Any) -> int:
    """Image blocks across ``messages`` (image presence is a setting the
    invalidation table names)."""
    images = 0
    for msg in messages or ():
        content = msg.get("content") if isinstance(msg, dict) else None
        if isinstance(content, list):
            images += sum(1 for part in content if isinstance(part, dict) and part.get("type") == "image")
    return images


def anthropic_assemble(params_ids: array[int], blocks: Sequence[tuple[str, array[int], list[tuple[int, Any]]]],
                       members: Sequence[tuple[str, bytes]], obj: dict[str, Any], model: str, time: float | None,
                       label: Hashable | None, output: Sequence[int] = (), images: int | None = None,
                       prev: Assembled | None = None, same: int = 0) -> tuple[SimRequest, Assembled]:
    """Anthropic's :class:`SimRequest` from the params segment's ids, each
    block's ``(level, ids, [(end, cache_control)])`` in cache order (else
    ``ValueError``) and the body's top-level ``(key, value bytes)`` members
    (the settings are read), and its :class:`Assembled` state: with ``prev``,
    the leading blocks that are ``prev``'s own (at most ``same``) and were
    changed alike are copied from its prompt. ``images``: the image blocks
    of ``obj``'s messages where counted (:func:`anthropic_images`).

    The params segment's fixed per-request run goes first; its other pieces
    (thinking, ``output_config``) and the ``tool_choice``-dependent part of
    the tool-use prompt (:func:`_tool_prompt_moved`) go ahead of the first
    message, since those settings invalidate the messages cache only."""
    if prev is not None and prev.params is params_ids and prev.model == model:
        n = len(prev.head)
    else:  # the fixed run of negative ids that leads the params estimate
        n = _run(params_ids, params_ids[0]) if len(params_ids) and params_ids[0] < 0 else 0
    head, rest = params_ids[:n], params_ids[n:]
    nb = len(blocks)
    # the first block of each level: blocks come in cache order
    first_tool = 0 if nb and blocks[0][0] == "tools" else None
    first_msg: int | None = bisect_left(blocks, 2, key=_rank)
    first_msg = None if first_msg == nb else first_msg
    cut = 0
    if first_tool is not None:
        if prev is not None and prev.parts and prev.parts[0] is blocks[0] and prev.model == model:
            cut = prev.cut
        else:
            cut = _tool_prompt_moved(model, blocks[first_tool][1])
        if cut:  # the tool_choice-dependent part of the tool-use prompt
            rest = blocks[first_tool][1][:cut] + rest
    salts: dict[str, list[bytes]] = {"system": [], "messages": []}
    for key, value in members:
        level = ANTHROPIC_INVALIDATES.get(key)
        if level is not None:
            salts[level].append(key.encode() + b"=" + value)
    if images is None:
        images = anthropic_images(obj.get("messages"))
    if images:
        salts[IMAGES_LEVEL].append(b"images=%d" % images)
    extra = None
    if len(rest) and first_msg is None:
        extra = ("messages", rest, [(len(rest), None)])
    joined = len(rest) if first_msg is not None else 0

    def size(idx: int) -> int:
        if idx == nb:
            return len(extra[1]) if extra is not None else 0
        got = len(blocks[idx][1])
        return got - cut if idx == first_tool else got + joined if idx == first_msg else got

    def first_of(rank: int) -> int | None:
        lo = bisect_left(blocks, rank, key=_rank)
        hi = bisect_left(blocks, rank + 1, lo, key=_rank)
        if rank == 2 and extra is not None:
            hi += 1
        return next((i for i in range(lo, hi) if size(i)), None)

    first_sys, first_m = first_of(1), first_of(2)
    targets: dict[int, list[bytes]] = {}
    # a level's salt goes on its first token; without a system prompt the
    # system-level salt falls on the first message (it invalidates both)
    for level, at in (("system", first_sys if first_sys is not None else first_m), ("messages", first_m)):
        if at is not None and salts[level]:
            targets.setdefault(at, []).extend(salts[level])
    mods: dict[int, Any] = {i: (None, None, b"|".join(t)) for i, t in targets.items()}
    if cut and first_tool is not None:
        mods[first_tool] = (cut, None, mods.get(first_tool, (0, None, None))[2])
    if joined and first_msg is not None:
        mods[first_msg] = (0, rest.tobytes(), mods.get(first_msg, (0, None, None))[2])
    parts = list(blocks)
    if extra is not None:
        parts.append(extra)
    j = 0
    if prev is not None and same and prev.head == head:
        j = _same_parts(parts, prev.parts, same)
        for idx in set(mods) | set(prev.mods):
            if idx < j and mods.get(idx) != prev.mods.get(idx):
                j = idx
    if j:
        flat, ends, marks, starts, n_ends, n_marks = _resume(prev, j)  # type: ignore[arg-type]
    else:
        flat = array(tokens.TOKEN_TYPECODE, head)
        ends, marks, starts, n_ends, n_marks = [], [], [len(flat)], [0], [0]
    last = _RANK[parts[j - 1][0]] if j else 0
    for idx in range(j, len(parts)):
        level, b_ids, b_ends = parts[idx]
        rank = _RANK[level]
        if rank < last:
            raise ValueError("Anthropic blocks out of cache order (tools, system, messages)")
        last = rank
        shift = 0
        if idx == first_tool and cut:
            b_ids, shift = b_ids[cut:], -cut
        elif idx == first_msg and joined:
            b_ids, shift = rest + b_ids, joined
        start = len(flat)
        flat.extend(b_ids)
        if idx in targets and len(b_ids):
            flat[start] = flat[start] ^ _salt(b"|".join(targets[idx]))
        for e, cc in b_ends:
            at = start + e + shift
            if at and (not ends or ends[-1] != at):
                ends.append(at)
            if isinstance(cc, dict) and at:
                marks.append((at, ttl_seconds(cc)))
        starts.append(len(flat))
        n_ends.append(len(ends))
        n_marks.append(len(marks))
    state = Assembled(parts, flat, starts, n_ends, ends, n_marks, marks, [], mods, head, None, params_ids, model, cut)
    top = obj.get("cache_control")
    every = marks + [(len(flat), ttl_seconds(top))] if isinstance(top, dict) and len(flat) else marks
    best: dict[int, float] = {}
    for at, ttl in every:
        best[at] = max(best.get(at, 0.0), ttl)
    bps = tuple(sorted(best))
    req = SimRequest(flat, time, bps, tuple(best[b] for b in bps), tuple(ends), output, ("anthropic", model), label)
    return req, state
