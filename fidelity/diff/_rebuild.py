"""The partly fixed child: the child's body with some breaks undone.

:func:`fixed_child` rebuilds the child's bytes from the aligned lanes of
:mod:`fidelity.diff.breaks`: arrays keep the child's separators, single values
are replaced, added or removed, params are set member by member; the result is
a body the differ compares like any other."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache

import orjson

from ..errors import InputError
from ..jsonbytes import iter_members, pointer, split_pointer
from ..wire import Segment
from ..wire.spans import element_spans, known_members, member_spans, value_spans, with_array

__all__ = ["Slot", "fixed_child"]


@dataclass(eq=False)
class Slot:
    """One place of the aligned lane and the break that owns it (``None``: the same on both sides)."""

    p: Segment | None
    c: Segment | None
    owner: int | None = None


def fixed_child(parent: bytes, child: bytes, slots: Sequence[Slot], fixed: set[int],
                spans: dict[tuple[int, str], list[tuple[int, int]]] | None = None) -> bytes:
    """The child's body with the breaks in ``fixed`` undone: each slot they own takes
    the parent's element as sent (or none); every other byte is the child's.
    ``spans``: the two bodies' array spans, kept by a caller that rebuilds again."""
    touched = [s for s in slots if s.owner in fixed]
    if not touched:
        return child
    # both bodies orjson's own bytes: every element sliced off them is too, so a rebuilt array
    # keeps the body compact and its layout follows from the pieces' lengths (spans.with_array)
    compact = known_members(parent) is not None and known_members(child) is not None
    body = child
    params = next((s for s in touched if _one(s).kind == "params"), None)
    if params is not None:  # member by member: the parent's value, or none
        body = _fix_params(parent, body, params)
    # arrays (tools, system blocks, messages) and single values (a string system prompt)
    arrays: dict[str, list[bytes]] = {}
    # each array of the parent and the child walked once (across rebuilds when the caller keeps ``spans``)
    spans = {} if spans is None else spans
    covered: dict[str, set[int]] = {}
    singles: dict[str, bytes] = {}
    # the containers a fixed break owns a slot of: the others keep the child's bytes, unread
    changed = {_container(one.pointer)[0] for one in map(_one, touched) if one.kind != "params"}
    for s in slots:
        one = _one(s)
        if one.kind == "params":
            continue
        container = _container(one.pointer)[0]
        if container not in changed:
            continue
        if s.c is not None:
            c_index = _container(s.c.pointer)[1]
            if c_index is not None:
                covered.setdefault(container, set()).add(c_index)
        body_of, seg = (parent, s.p) if s.owner in fixed else (child, s.c)
        if seg is None:
            continue
        # the shape the chosen segments give (a string system prompt or a list of blocks)
        if _container(seg.pointer)[1] is not None:
            arrays.setdefault(container, []).append(_element(body_of, seg.pointer, spans))
        else:
            singles[container] = _value(body_of, seg.pointer)
    for container in sorted(changed):
        if container in singles:
            body = _set_value(body, container, singles[container])
        elif container in arrays or container in covered:
            body = _set_array(body, container, arrays.get(container, []), covered.get(container, set()), compact)
        else:  # nothing chosen there: the member goes
            body = _set_value(body, container, None)
    return body


def _one(s: Slot) -> Segment:
    one = s.p if s.p is not None else s.c
    assert one is not None
    return one


@lru_cache(maxsize=65536)
def _container(ptr: str) -> tuple[str, int | None]:
    """``("/tools", 3)`` for ``/tools/3``; ``("/system", None)`` for a single value."""
    parts = split_pointer(ptr)
    if parts and parts[-1].isdigit():
        return pointer(*parts[:-1]), int(parts[-1])
    return ptr, None


def _element(body: bytes, ptr: str, spans: dict[tuple[int, str], list[tuple[int, int]]]) -> bytes:
    """The bytes of array element ``ptr``, its array's spans kept in ``spans``."""
    container, index = _container(ptr)
    key = (id(body), container)
    found = spans.get(key)
    if found is None:
        found = spans[key] = element_spans(body, container)
    if index is None or index >= len(found):
        raise InputError("no value at this pointer", pointer=ptr)
    a, b = found[index]
    return body[a:b]


def _value(body: bytes, ptr: str) -> bytes:
    span = value_spans(body, [ptr]).get(ptr)
    if span is None:
        raise InputError("no value at this pointer", pointer=ptr)
    return body[span[0] : span[1]]


def _set_array(body: bytes, ptr: str, elems: list[bytes], covered: set[int], compact: bool = False) -> bytes:
    """``body`` with the array at ``ptr`` holding ``elems``; elements no segment covers
    (Claude Code's billing block) keep their place at the start or the end."""
    span = value_spans(body, [ptr]).get(ptr)
    if span is None:
        return _set_value(body, ptr, b"[" + b",".join(elems) + b"]")
    spans = element_spans(body, ptr)
    low = min(covered) if covered else len(spans)
    lead = [body[a:b] for k, (a, b) in enumerate(spans) if k not in covered and k < low]
    tail = [body[a:b] for k, (a, b) in enumerate(spans) if k not in covered and k > low]
    sep = body[spans[0][1] : spans[1][0]] if len(spans) > 1 else b","
    opener = body[span[0] : spans[0][0]] if spans else b"["
    closer = body[spans[-1][1] : span[1]] if spans else b"]"
    parts = split_pointer(ptr)
    if compact and len(parts) == 1:
        out = with_array(body, parts[0], [*lead, *elems, *tail])
        if out is not None:
            return out
    return body[: span[0]] + opener + sep.join([*lead, *elems, *tail]) + closer + body[span[1] :]


def _set_value(body: bytes, ptr: str, value: bytes | None) -> bytes:
    """``body`` with the value at ``ptr`` replaced (``None``: removed); a missing member
    is added to the deepest object that exists, the objects between built around it."""
    span = value_spans(body, [ptr]).get(ptr)
    parts = split_pointer(ptr)
    if span is not None and value is not None:
        return body[: span[0]] + value + body[span[1] :]
    if not parts:
        raise InputError("cannot rebuild the child: no body", pointer=ptr)
    if value is None:
        return _set_member(body, pointer(*parts[:-1]), parts[-1], None) if span is not None else body
    k = len(parts) - 1
    while k and pointer(*parts[:k]) not in value_spans(body, [pointer(*parts[:k])]):
        k -= 1
    for key in reversed(parts[k + 1 :]):  # the missing containers between, innermost first
        if key == "0":
            value = b"[" + value + b"]"
        elif key.isdigit():
            raise InputError("cannot rebuild the child: an array on the way is too short", pointer=ptr)
        else:
            value = b"{" + orjson.dumps(key) + b":" + value + b"}"
    where = pointer(*parts[:k])
    if parts[k].isdigit():  # a new last element of an array that exists
        spans = element_spans(body, where)
        if int(parts[k]) != len(spans):
            raise InputError("cannot rebuild the child: an array on the way is too short", pointer=ptr)
        at = value_spans(body, [where])[where][1] - 1
        return body[:at] + (b"," if spans else b"") + value + body[at:]
    return _set_member(body, where, parts[k], value)


def _set_member(body: bytes, obj: str, key: str, value: bytes | None) -> bytes:
    """``body`` with member ``key`` of object ``obj`` set to ``value`` (added at the end; ``None``: removed)."""
    span = value_spans(body, [obj]).get(obj)
    if span is None or body[span[0] : span[0] + 1] != b"{":
        raise InputError("cannot rebuild the child: not an object", pointer=obj)
    members = member_spans(body, obj)
    for n, m in enumerate(members):
        if m.key != key:
            continue
        if value is not None:
            return body[: m.value_start] + value + body[m.end :]
        if n + 1 < len(members):  # drop it and the comma after it
            return body[: m.start] + body[members[n + 1].start :]
        if n:  # the last: drop the comma before it
            return body[: members[n - 1].end] + body[m.end :]
        return body[: m.start] + body[m.end :]
    if value is None:
        return body
    end = span[0] + body[span[0] : span[1]].rfind(b"}")
    comma = b"," if members else b""
    return body[:end] + comma + orjson.dumps(key) + b":" + value + body[end:]


def _fix_params(parent: bytes, body: bytes, slot: Slot) -> bytes:
    """``body`` with each cache-key member of the params segment as the parent sends it."""
    keys: dict[str, None] = {}
    for seg in (slot.p, slot.c):
        if seg is not None:
            wrapped = b"{" + seg.data + b"}"
            try:
                keys.update(dict.fromkeys(m.key for m in iter_members(wrapped, 0)))
            except InputError:
                continue
    p_members = {m.key: parent[m.value_start : m.end] for m in member_spans(parent)}
    for key in keys:
        body = _set_member(body, "", key, p_members.get(key))
    return body
