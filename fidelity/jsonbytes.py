"""JSON byte helpers shared by every wire dialect, all byte-exact: the SDKs'
serialisation (:func:`dumps_compact`), RFC 6901 pointers, and a byte scanner
giving the exact ``(start, end)`` of values (:func:`value_spans`,
:func:`member_spans`, :func:`element_spans`), so a cache view slices the body
instead of re-rendering it. :func:`loads` is :func:`fidelity.jsonio.loads`.

>>> body = dumps_compact({"model": "m", "tools": [{"a": 1}, {"b": "é"}]})
>>> s, e = value_spans(body, ["/tools/1"])["/tools/1"]
>>> body[s:e].decode()
'{"b":"é"}'
"""

from __future__ import annotations

import json
import re
import threading
from collections.abc import Iterable, Iterator, Sequence
from contextlib import contextmanager
from typing import Any, NamedTuple

from .errors import InputError
from .jsonends import container_ends, walk
from .jsonio import loads

__all__ = [
    "dumps_compact",
    "dumps_pyjson",
    "loads",
    "escape_token",
    "pointer",
    "split_pointer",
    "Member",
    "value_spans",
    "member_spans",
    "element_spans",
    "slice_at",
    "skip_ws",
    "skip_value",
    "iter_members",
    "iter_elements",
    "scan_memo",
]

_COMPACT = json.JSONEncoder(ensure_ascii=False, separators=(",", ":"), allow_nan=False)


def dumps_compact(obj: Any) -> bytes:
    """``obj`` as the openai / anthropic SDKs put it on the wire (key order
    kept, tuples as arrays); :class:`InputError` for what the SDK cannot send
    (a lone surrogate, NaN / Infinity)."""
    # openai/_utils/_json.py (openai 3.57.0), anthropic/_utils/_json.py (anthropic 2.14):
    # ensure_ascii=False, separators=(",", ":"), allow_nan=False
    try:
        text = _COMPACT.encode(obj)
    except ValueError as exc:
        raise InputError(f"cannot serialise as JSON: {exc}") from None
    except TypeError as exc:
        raise InputError(f"not a JSON value: {exc}") from None
    try:
        return text.encode("utf-8")
    except UnicodeEncodeError as exc:
        raise InputError(
            f"string holds a lone surrogate U+{ord(text[exc.start]):04X}; "
            "the SDK cannot encode it as UTF-8"
        ) from None


def dumps_pyjson(obj: Any) -> bytes:
    """``json.dumps(obj).encode()``: the ``json`` defaults (``", "``, ``": "``, ASCII, NaN allowed)."""
    try:
        return json.dumps(obj).encode("ascii")
    except TypeError as exc:
        raise InputError(f"not a JSON value: {exc}") from None


# --------------------------------------------------------------------------
# RFC 6901 pointers (https://www.rfc-editor.org/rfc/rfc6901 section 3/4:
# "~" is written "~0" and "/" is written "~1"; "" is the whole document).


def escape_token(token: str | int) -> str:
    """One reference token of a JSON pointer: ``~`` -> ``~0``, ``/`` -> ``~1``."""
    return str(token).replace("~", "~0").replace("/", "~1")


def pointer(*tokens: str | int) -> str:
    """Build a pointer: ``pointer("messages", 3, "content")`` -> ``/messages/3/content``."""
    if not tokens:
        return ""
    # one join, escaping only what needs it (a cache view builds a pointer per message)
    return "/" + "/".join(escape_token(t) if isinstance(t, str) and ("~" in t or "/" in t) else str(t)
                          for t in tokens)


def split_pointer(ptr: str) -> tuple[str, ...]:
    """The unescaped reference tokens of ``ptr`` (``""`` -> ``()``)."""
    if ptr == "":
        return ()
    if not ptr.startswith("/"):
        raise InputError(f"JSON pointer must start with '/': {ptr!r}")
    return tuple(t.replace("~1", "/").replace("~0", "~") for t in ptr[1:].split("/"))


# --------------------------------------------------------------------------
# Byte scanner. Works on bytes; string tokens are matched with a regex (C
# speed), containers we do not need are skipped by bracket counting.

_WS = re.compile(rb"[ \t\n\r]*")
_STRING = re.compile(rb'"[^"\\]*(?:\\.[^"\\]*)*"', re.DOTALL)  # unrolled: no alternation per byte
_SCALAR = re.compile(rb"-?(?:0|[1-9][0-9]*)(?:\.[0-9]+)?(?:[eE][-+]?[0-9]+)?|true|false|null")
#: a key without escapes or control characters: its text is its UTF-8 bytes
_PLAIN_KEY = re.compile(rb'"[^"\\\x00-\x1f]*"')

class Member(NamedTuple):
    """One ``"key":value`` member of an object: ``start`` is the offset of the
    key's opening quote, ``value_start``/``end`` delimit the value (``end``
    exclusive). ``body[start:end]`` is the member exactly as sent."""

    key: str
    start: int
    value_start: int
    end: int


class _Memo:
    """Scan results per body, by identity (the bodies are held, so an id is not reused)."""

    def __init__(self) -> None:
        self.bodies: dict[int, bytes] = {}
        self.ends: dict[tuple[int, int], int] = {}
        self.elements: dict[tuple[int, int], list[tuple[int, int]]] = {}
        self.members: dict[tuple[int, int], list[Member]] = {}

    def key(self, body: bytes, pos: int) -> tuple[int, int]:
        self.bodies.setdefault(id(body), body)
        return id(body), pos


_SCAN = threading.local()


@contextmanager
def scan_memo() -> Iterator[None]:
    """Within the block, each container is scanned once: its end and the spans
    of its elements and members are remembered (same results without it)."""
    outer = getattr(_SCAN, "memo", None) is None
    if outer:
        _SCAN.memo = _Memo()
    try:
        yield
    finally:
        if outer:
            _SCAN.memo = None


def skip_ws(body: bytes, pos: int) -> int:
    if pos < len(body) and body[pos] > 0x20:  # compact JSON: no whitespace to skip, no regex call
        return pos
    return _WS.match(body, pos).end()  # type: ignore[union-attr]


def _bad(body: bytes, pos: int, what: str) -> InputError:
    return InputError(f"malformed JSON at byte {pos}: {what}")


def skip_value(body: bytes, pos: int) -> int:
    """Return the end offset of the value starting at ``pos`` (no whitespace)."""
    if pos >= len(body):
        raise _bad(body, pos, "unexpected end")
    c = body[pos]
    if c == 0x22:  # "
        m = _STRING.match(body, pos)
        if not m:
            raise _bad(body, pos, "unterminated string")
        return m.end()
    if c in (0x7B, 0x5B):  # { [
        memo: _Memo | None = getattr(_SCAN, "memo", None)
        if memo is not None:
            key = memo.key(body, pos)
            end = memo.ends.get(key)
            if end is None:
                end = memo.ends[key] = _skip_array(body, pos, memo, key) if c == 0x5B else _skip_container(body, pos)
            return end
        return _skip_container(body, pos)
    m = _SCALAR.match(body, pos)
    if not m:
        raise _bad(body, pos, "unexpected character")
    return m.end()


def _skip_container(body: bytes, pos: int) -> int:
    """End of the container opening at ``pos``: looked up in
    :func:`fidelity.jsonends.container_ends`, else walked from there."""
    ends = container_ends(body) if type(body) is bytes else None
    end = ends.get(pos) if ends is not None else None
    return end if end is not None else walk(body, pos)[0]


#: an array whose first elements average at least this many bytes is scanned
#: element by element (see :func:`_skip_array`); probed on its first elements
_WIDE_ELEMENT = 256
_PROBE = 32


def _skip_array(body: bytes, pos: int, memo: _Memo, key: tuple[int, int]) -> int:
    """End of the array at ``pos``, with the spans of its elements (wide
    containers) remembered on the way, those another body of the memo shares
    not scanned again (:func:`_shared_elements`)."""
    spans: list[tuple[int, int]] = []
    for start, end in _iter_elements(body, pos, _shared_elements(body, pos, memo)):
        if body[start] not in (0x7B, 0x5B) or (len(spans) == _PROBE and start - pos < _PROBE * _WIDE_ELEMENT):
            return _skip_container(body, pos)
        spans.append((start, end))
    if not spans:
        return _skip_container(body, pos)
    memo.elements[key] = spans
    return skip_ws(body, spans[-1][1]) + 1  # past the ']' that _iter_elements found


def iter_members(body: bytes, pos: int) -> Iterable[Member]:
    """Members of the object starting at ``pos`` (which must be ``{``)."""
    memo: _Memo | None = getattr(_SCAN, "memo", None)
    if memo is None:
        return _iter_members(body, pos)
    key = memo.key(body, pos)
    found = memo.members.get(key)
    if found is None:
        found = memo.members[key] = list(_iter_members(body, pos))
    return iter(found)


def _iter_members(body: bytes, pos: int) -> Iterator[Member]:
    if body[pos : pos + 1] != b"{":
        raise _bad(body, pos, "expected an object")
    pos = skip_ws(body, pos + 1)
    if body[pos : pos + 1] == b"}":
        return
    while True:
        key_match = _STRING.match(body, pos)
        if not key_match:
            raise _bad(body, pos, "expected a key")
        plain = _PLAIN_KEY.match(body, pos)
        if plain is not None and plain.end() == key_match.end():
            key = body[pos + 1 : plain.end() - 1].decode("utf-8")
        else:
            key = json.loads(key_match.group().decode("utf-8"))
        pos = skip_ws(body, key_match.end())
        if body[pos : pos + 1] != b":":
            raise _bad(body, pos, "expected ':'")
        value_start = skip_ws(body, pos + 1)
        end = skip_value(body, value_start)
        yield Member(key, key_match.start(), value_start, end)
        pos = skip_ws(body, end)
        sep = body[pos : pos + 1]
        if sep == b"}":
            return
        if sep != b",":
            raise _bad(body, pos, "expected ',' or '}'")
        pos = skip_ws(body, pos + 1)


def iter_elements(body: bytes, pos: int) -> Iterable[tuple[int, int]]:
    """``(start, end)`` of each element of the array starting at ``pos``."""
    memo: _Memo | None = getattr(_SCAN, "memo", None)
    if memo is None:
        return _iter_elements(body, pos)
    key = memo.key(body, pos)
    found = memo.elements.get(key)
    if found is None:
        found = memo.elements[key] = list(_iter_elements(body, pos, _shared_elements(body, pos, memo)))
    return iter(found)


def _iter_elements(body: bytes, pos: int, known: Sequence[tuple[int, int]] = ()) -> Iterator[tuple[int, int]]:
    """Spans of the elements of the array at ``pos``, going on after ``known``
    (its first elements' spans, :func:`_shared_elements`)."""
    if body[pos : pos + 1] != b"[":
        raise _bad(body, pos, "expected an array")
    if known:
        yield from known
        end = known[-1][1]
    else:
        pos = skip_ws(body, pos + 1)
        if body[pos : pos + 1] == b"]":
            return
        end = skip_value(body, pos)
        yield pos, end
    while True:
        pos = skip_ws(body, end)
        sep = body[pos : pos + 1]
        if sep == b"]":
            return
        if sep != b",":
            raise _bad(body, pos, "expected ',' or ']'")
        pos = skip_ws(body, pos + 1)
        end = skip_value(body, pos)
        yield pos, end


def _shared_elements(body: bytes, pos: int, memo: _Memo) -> list[tuple[int, int]]:
    """The longest run of leading element spans of the array at ``pos`` that
    another body of the memo scanned over equal bytes (bisection with ``memcmp``)."""
    best: list[tuple[int, int]] = []
    view: memoryview | None = None
    for other_id, other in memo.bodies.items():
        spans = memo.elements.get((other_id, pos))
        if other is body or not spans:
            continue
        view = memoryview(body) if view is None else view
        lo, hi = 0, len(spans)  # invariant: the first lo spans are shared; more than hi are not
        while lo < hi:
            mid = (lo + hi + 1) // 2
            if other.startswith(view[pos : spans[mid - 1][1] + 1], pos):
                lo = mid
            else:
                hi = mid - 1
        if lo > len(best):
            best = spans[:lo]
    return best


def _locate(body: bytes, tokens: tuple[str, ...]) -> tuple[int, int] | None:
    """Span of the value at ``tokens`` or ``None`` when it is absent."""
    start = skip_ws(body, 0)
    if not tokens:
        return start, skip_value(body, start)
    end = start
    for token in tokens:
        opener = body[start : start + 1]
        found: tuple[int, int] | None = None
        if opener == b"{":
            for member in iter_members(body, start):
                if member.key == token:
                    found = (member.value_start, member.end)  # last duplicate wins, as json.loads
        elif opener == b"[":
            if not token.isdigit() or (len(token) > 1 and token[0] == "0"):
                return None
            wanted = int(token)
            for i, span in enumerate(iter_elements(body, start)):
                if i == wanted:
                    found = span
                    break
        if found is None:
            return None
        start, end = found
    return start, end


def value_spans(body: bytes, pointers: Iterable[str]) -> dict[str, tuple[int, int]]:
    """``{pointer: (start, end)}``: ``body[start:end]`` is the value at each
    pointer as sent; pointers that do not resolve are left out, malformed
    JSON on the way raises :class:`InputError`."""
    body = bytes(body)
    out: dict[str, tuple[int, int]] = {}
    for ptr in pointers:
        span = _locate(body, split_pointer(ptr))
        if span is not None:
            out[ptr] = span
    return out


def slice_at(body: bytes, ptr: str) -> bytes:
    """The exact bytes of the value at ``ptr``; :class:`InputError` if absent."""
    span = _locate(bytes(body), split_pointer(ptr))
    if span is None:
        raise InputError("no value at this pointer", pointer=ptr)
    return body[span[0] : span[1]]


def _opening(body: bytes, ptr: str, opener: bytes) -> int | None:
    """Where the value at ``ptr`` starts if it opens with ``opener``, else ``None``."""
    span = _locate(body, split_pointer(ptr))
    return span[0] if span is not None and body[span[0] : span[0] + 1] == opener else None


def member_spans(body: bytes, ptr: str = "") -> list[Member]:
    """The members of the object at ``ptr`` in body order (``[]`` if absent or not an object)."""
    body = bytes(body)
    at = _opening(body, ptr, b"{")
    return [] if at is None else list(iter_members(body, at))


def element_spans(body: bytes, ptr: str) -> list[tuple[int, int]]:
    """``(start, end)`` of each element of the array at ``ptr`` (``[]`` if absent or not an array)."""
    body = bytes(body)
    at = _opening(body, ptr, b"[")
    return [] if at is None else list(iter_elements(body, at))
