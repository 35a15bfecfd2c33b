"""Where a body's top-level members and the elements of its top-level
arrays sit: what each dialect's cache view slices.

:func:`fidelity.jsonbytes.member_spans` and :func:`~fidelity.jsonbytes.element_spans`
find them with a byte scanner written in Python, for any JSON text. Most
bodies are compact JSON as orjson writes it (the SDKs' ``separators=(",",
":")`` rendering, the proxy's and the report's bodies): for such a body,
``orjson.dumps(orjson.loads(body)) == body``, and since orjson writes an
object as ``{`` + ``"key":value`` members joined by ``,`` + ``}`` and an
array likewise, every member's and element's offset follows from the
lengths of their own serialisations, computed in C. Any other body (spaces
after separators, escapes orjson would not write, numbers written
otherwise) fails that equality and goes to the scanner, so the spans are
the same either way (``tests/test_wire_spans.py`` checks both on generated
bodies).
"""

from __future__ import annotations

import threading
from typing import Any

import orjson

from .. import jsonio
from ..jsonbytes import Member, element_spans, escape_token, loads, member_spans, value_spans

__all__ = ["parsed", "top_members", "top_elements", "top_value"]

#: one member's span and, when its value is an array, its elements' spans
_Entry = tuple[Member, "list[tuple[int, int]] | None"]


def parsed(body: bytes) -> Any:
    """``body`` parsed strictly, as :func:`fidelity.jsonbytes.loads` parses
    it (same value, same refusals): a compact body (see the module
    docstring) by orjson, in C, since orjson writing it back byte for byte
    leaves nothing the strict parser refuses (no duplicate key, no NaN, no
    integer past 64 bits, no lone surrogate) but nesting, left to the strict
    parser when it may be too deep; any other body by the strict parser.
    A new value each call."""
    layout = _layout(body)
    if layout is None or body.count(b"[") + body.count(b"{") > jsonio.MAX_DEPTH:
        return loads(body)
    return orjson.loads(body)


def top_members(body: bytes) -> list[Member]:
    """The members of the object ``body`` in body order (``[]`` if it is not an object)."""
    layout = _layout(body)
    if layout is None:
        return member_spans(body)
    return [m for m, _ in layout.values()]


def top_elements(body: bytes, key: str) -> list[tuple[int, int]]:
    """``(start, end)`` of each element of the top-level array ``key`` (``[]``
    if absent or not an array)."""
    layout = _layout(body)
    if layout is None:
        return element_spans(body, "/" + escape_token(key))
    found = layout.get(key)
    return [] if found is None or found[1] is None else list(found[1])


def top_value(body: bytes, key: str) -> tuple[int, int] | None:
    """``(start, end)`` of the value of the top-level member ``key`` (``None`` if absent)."""
    layout = _layout(body)
    if layout is None:
        ptr = "/" + escape_token(key)
        return value_spans(body, [ptr]).get(ptr)
    found = layout.get(key)
    return None if found is None else (found[0].value_start, found[0].end)


def _layout(body: bytes) -> dict[str, _Entry] | None:
    """Each top-level member of a compact body (``orjson.dumps`` of its parse
    gives it back byte for byte), with its elements' spans when its value is
    an array; ``None`` for any other body. Kept for the last few bodies (a
    view asks several times)."""
    with _LOCK:
        if body in _LAST:
            return _LAST[body]
    got = _compact_layout(body)
    with _LOCK:
        if len(_LAST) >= 8:
            _LAST.pop(next(iter(_LAST)))
        _LAST[body] = got
    return got


def _compact_layout(body: bytes) -> dict[str, _Entry] | None:
    if body[:1] != b"{":
        return None
    try:
        obj = orjson.loads(body)
        if not isinstance(obj, dict) or orjson.dumps(obj) != body:
            return None
        out: dict[str, _Entry] = {}
        at = 1  # past the opening brace
        for key, value in obj.items():
            value_start = at + len(orjson.dumps(key)) + 1  # past the colon
            spans: list[tuple[int, int]] | None = None
            if isinstance(value, list):
                spans, pos = [], value_start + 1  # past the opening bracket
                for element in value:
                    end = pos + len(orjson.dumps(element))
                    spans.append((pos, end))
                    pos = end + 1  # past the comma
            end = value_start + len(orjson.dumps(value))
            out[key] = (Member(key, at, value_start, end), spans)
            at = end + 1  # past the comma
    except (orjson.JSONDecodeError, TypeError):  # not JSON, or a value orjson does not write back
        return None
    return out


_LAST: dict[bytes, dict[str, _Entry] | None] = {}
_LOCK = threading.Lock()
