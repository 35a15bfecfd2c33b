"""Where a body's top-level members and the elements of its top-level arrays
sit (what each dialect's cache view slices): :mod:`fidelity.jsonbytes`'s
results, computed in C for a compact body (``orjson.dumps(orjson.loads(body))
== body``: each offset follows from the lengths of the members' and elements'
own serialisations); any other body goes to the byte scanner.
``tests/wire/test_wire_spans.py`` checks both agree on generated bodies.
"""

from __future__ import annotations

import threading
from collections.abc import Mapping, Sequence
from typing import Any

import orjson

from .. import jsonbytes
from ..jsonbytes import Member

__all__ = ["parsed", "compact_members", "known_members", "top_members", "top_elements", "top_value", "member_spans", "element_spans", "value_spans", "laid_out", "remember", "with_array"]

#: one member's span and, when its value is an array, its elements' spans
_Entry = tuple[Member, "list[tuple[int, int]] | None"]
#: what :func:`_span` answers when the layout cannot tell (the scanner decides)
_UNKNOWN = (-1, -1)


def parsed(body: bytes, path: str | None = None) -> Any:
    """``body`` parsed as :func:`fidelity.jsonbytes.loads` parses it (same
    value, same refusals; a new value each call): a compact body by orjson,
    any other by the strict parser (its error names ``path``)."""
    # orjson writing a body back byte for byte leaves nothing the strict parser refuses: no
    # duplicate key, NaN, int past 64 bits or lone surrogate, and each member value and element
    # is written at most 254 levels deep, within jsonio.MAX_DEPTH (tests/wire/test_wire_spans.py)
    fresh: list[Any] = []
    if compact_members(body, fresh) is None:
        return jsonbytes.loads(body, path=path)
    return fresh[0] if fresh else orjson.loads(body)


def compact_members(body: bytes, fresh: list[Any] | None = None) -> dict[str, _Entry] | None:
    """Each top-level member of a compact body by key, with its elements' spans
    when its value is an array; ``None`` for any other body. Shared: read-only.
    Kept for the last bodies (up to :data:`_LAST_BYTES`); when computed here,
    the parsed body (held by nothing else) is appended to ``fresh``."""
    with _LOCK:
        if body in _LAST:
            return _LAST[body]
    got = _compact_layout(body, fresh)
    with _LOCK:
        if body not in _LAST:
            _keep(body, got)
    return got


def known_members(body: bytes) -> dict[str, tuple[Member, list[tuple[int, int]] | None]] | None:
    """:func:`compact_members` of a body whose layout is remembered already
    (the last bodies laid out), else ``None``: never a new pass over ``body``."""
    with _LOCK:
        return _LAST.get(body)


def top_members(body: bytes) -> list[Member]:
    """The members of the object ``body`` in body order (``[]`` if it is not an object)."""
    return member_spans(body)


def top_elements(body: bytes, key: str) -> list[tuple[int, int]]:
    """``(start, end)`` of each element of the top-level array ``key`` (``[]``
    if absent or not an array)."""
    return element_spans(body, "/" + jsonbytes.escape_token(key))


def top_value(body: bytes, key: str) -> tuple[int, int] | None:
    """``(start, end)`` of the value of the top-level member ``key`` (``None`` if absent)."""
    ptr = "/" + jsonbytes.escape_token(key)
    return value_spans(body, [ptr]).get(ptr)


def member_spans(body: bytes, ptr: str = "") -> list[Member]:
    """:func:`fidelity.jsonbytes.member_spans`, the same result."""
    layout = compact_members(body) if ptr == "" else None
    if layout is None:
        return jsonbytes.member_spans(body, ptr)
    return [m for m, _ in layout.values()]


def element_spans(body: bytes, ptr: str) -> list[tuple[int, int]]:
    """:func:`fidelity.jsonbytes.element_spans`, the same result."""
    layout = compact_members(body)
    parts = jsonbytes.split_pointer(ptr) if layout is not None else []
    if layout is None or len(parts) != 1:
        return jsonbytes.element_spans(body, ptr)
    found = layout.get(parts[0])
    return [] if found is None or found[1] is None else list(found[1])


def value_spans(body: bytes, ptrs: Sequence[str]) -> dict[str, tuple[int, int]]:
    """:func:`fidelity.jsonbytes.value_spans`, the same result: each pointer
    found, with the ``(start, end)`` of its value."""
    out: dict[str, tuple[int, int]] = {}
    rest: list[str] = []
    for ptr in ptrs:
        got = _span(body, ptr)
        if got is _UNKNOWN:
            rest.append(ptr)
        elif got is not None:
            out[ptr] = got
    if rest:
        out.update(jsonbytes.value_spans(body, rest))
    return out


def _span(body: bytes, ptr: str) -> tuple[int, int] | None:
    """The span of the value at ``ptr`` from a compact body's layout (a
    top-level member, or an element of a top-level array), ``None`` when it
    is absent, :data:`_UNKNOWN` when the layout cannot tell."""
    layout = compact_members(body)
    if layout is None:
        return _UNKNOWN
    if ptr == "":
        return (0, len(body))
    parts = jsonbytes.split_pointer(ptr)
    if len(parts) > 2:
        return _UNKNOWN
    found = layout.get(parts[0])
    if found is None:
        return None
    member, spans = found
    if len(parts) == 1:
        return (member.value_start, member.end)
    token = parts[1]
    if spans is None or not token.isdigit() or (len(token) > 1 and token[0] == "0"):
        return _UNKNOWN
    index = int(token)
    return spans[index] if index < len(spans) else None


def _compact_layout(body: bytes, fresh: list[Any] | None = None) -> dict[str, _Entry] | None:
    if body[:1] != b"{":
        return None
    try:
        obj = orjson.loads(body)
        if not isinstance(obj, dict):
            return None
        written, out = laid_out(obj)
        if written != body:
            return None
    except (orjson.JSONDecodeError, TypeError):  # not JSON, or a value orjson does not write back
        return None
    if fresh is not None:
        fresh.append(obj)
    return out


def laid_out(obj: Mapping[str, Any]) -> tuple[bytes, dict[str, _Entry]]:
    """``orjson.dumps(obj)`` of an object, and where each member and each
    element of an array (list or tuple) value sits in it, each serialised on
    its own. ``TypeError`` where orjson refuses a value or a key is not a string."""
    # orjson writes an object as "{" + the "key":value members joined by "," + "}", an array likewise
    out: dict[str, _Entry] = {}
    pieces: list[bytes] = []
    dumps = orjson.dumps
    at = 1  # past the opening brace
    for key, value in obj.items():
        if not isinstance(key, str):
            raise TypeError(f"an object key must be a string, not {type(key).__name__}")
        head = dumps(key) + b":"
        value_start = at + len(head)
        spans: list[tuple[int, int]] | None = None
        kind = type(value)
        if kind is list or kind is tuple:
            parts = [dumps(element) for element in value]
            spans = _element_spans(value_start, parts)
            written = b"[" + b",".join(parts) + b"]"
        else:
            written = dumps(value)
        end = value_start + len(written)
        out[key] = (Member(key, at, value_start, end), spans)
        pieces.append(head + written)
        at = end + 1  # past the comma
    return b"{" + b",".join(pieces) + b"}", out


def _element_spans(value_start: int, parts: Sequence[bytes]) -> list[tuple[int, int]]:
    """Where each of ``parts`` sits in the array ``[`` + ``parts`` joined by
    ``,`` + ``]`` written from ``value_start``."""
    spans, pos = [], value_start + 1  # past the opening bracket
    for part in parts:
        spans.append((pos, pos + len(part)))
        pos += len(part) + 1  # past the comma
    return spans


def remember(body: bytes, layout: dict[str, _Entry]) -> None:
    """Keep ``layout`` as the layout of ``body`` (:func:`compact_members`); the
    caller vouches that ``body, layout = laid_out(obj)`` for an ``obj`` that
    orjson writes as ``json.dumps`` does."""
    with _LOCK:
        if body not in _LAST:
            _keep(body, layout)


def with_array(body: bytes, key: str, pieces: Sequence[bytes]) -> bytes | None:
    """``body`` with its top-level array ``key`` holding ``pieces`` (each
    orjson's bytes of a value), its layout derived from ``body``'s and kept;
    ``None`` unless ``body``'s layout is remembered with ``key`` an array."""
    with _LOCK:
        layout = _LAST.get(body)
    found = layout.get(key) if layout is not None else None
    if layout is None or found is None or found[1] is None:
        return None
    member = found[0]
    new_value = b"[" + b",".join(pieces) + b"]"
    out = body[: member.value_start] + new_value + body[member.end :]
    shift = len(new_value) - (member.end - member.value_start)
    spans = _element_spans(member.value_start, pieces)
    entries: dict[str, _Entry] = {}
    for k, (m, elements) in layout.items():
        if m.start > member.start:
            m = Member(k, m.start + shift, m.value_start + shift, m.end + shift)
            elements = None if elements is None else [(a + shift, b + shift) for a, b in elements]
        elif k == key:
            m, elements = Member(k, m.start, m.value_start, m.end + shift), spans
        entries[k] = (m, elements)
    remember(out, entries)
    return out


def _keep(body: bytes, layout: dict[str, _Entry] | None) -> None:
    """Hold ``layout`` for ``body`` in :data:`_LAST` (the caller holds the lock), oldest out first."""
    _LAST[body] = layout
    _SIZE[0] += len(body)
    while len(_LAST) > 1 and (len(_LAST) > _LAST_COUNT or _SIZE[0] > _LAST_BYTES):
        oldest = next(iter(_LAST))
        del _LAST[oldest]
        _SIZE[0] -= len(oldest)


_LAST: dict[bytes, dict[str, _Entry] | None] = {}
#: bytes of the bodies held in :data:`_LAST` (a scan's bodies may be megabytes)
_SIZE = [0]
_LAST_BYTES = 32 << 20
#: bodies held in :data:`_LAST` at most (a report row asks about its parent's and
#: children's bodies again after viewing the parent's whole request sequence)
_LAST_COUNT = 128
_LOCK = threading.Lock()
