"""Parse a log line against an earlier line of the same session: only the
bytes after their shared history are parsed.

A session re-sends its whole history with every request, so most of each
line's ``"messages":[...]`` array is byte for byte the previous line's. A
:class:`Parsed` line remembers where each of its messages sits (when the
line's messages are compact JSON, as ``orjson`` and most gateways write
them; checked byte for byte). :func:`parse_after` finds the earlier line's
array in the new line, compares the two from there (one ``memcmp`` per
step of a binary search), cuts the leading messages both lines hold, parses
what is left with :func:`~fidelity.scan.records.parse_record` and puts the
earlier line's parsed messages back in front. Identical bytes parse to equal
values, so the record equals a whole parse; the shared messages are the very
same objects, so comparing the two requests later costs a pointer test per
message. Whatever does not fit (no earlier line, a body held as text, other
spacing, a cut that did not land in the body's own array) is parsed whole.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import orjson

from .records import Record, parse_record

__all__ = ["Parsed", "parse_after"]

_KEY = b'"messages":['
# what stands in for the cut messages: a number no request holds in its
# message array (parse_after checks it came back where it was put)
_MARK = b"-7.77e-300"
_MARK_VALUE = float(_MARK)


@dataclass
class Parsed:
    """A parsed line and where its body's messages sit in it: ``start``
    (the offset of the first message, ``-1`` when unknown) and ``ends``
    (each message's end, relative to ``start``)."""

    rec: Record
    line: bytes
    start: int = -1
    ends: list[int] = field(default_factory=list)
    #: how many leading messages came from the earlier line (0: parsed whole)
    reused: int = 0


def _shared_messages(line: bytes, start: int, ref: Parsed) -> int:
    """How many of ``ref``'s leading messages ``line`` holds byte for byte
    from ``start`` (at least the first, which the caller found there): a
    binary search over message ends, one ``memcmp`` a step."""
    mv = memoryview(ref.line)[ref.start:]
    ends = ref.ends
    if line.startswith(mv[:ends[-1]], start):
        return len(ends)
    lo, hi = 1, len(ends)  # the first lo messages are shared, the first hi are not
    while hi - lo > 1:
        mid = (lo + hi) // 2
        if line.startswith(mv[ends[lo - 1]:ends[mid - 1]], start + ends[lo - 1]):
            lo = mid
        else:
            hi = mid
    return lo


def _messages(rec: Record) -> list[Any] | None:
    if rec.raw_body is not None or rec.detected:
        # a body held as text (its bytes are not the line's), or a dialect
        # recognised from the messages (a cut body might be recognised otherwise)
        return None
    msgs = rec.body.get("messages")
    return msgs if isinstance(msgs, list) else None


def _place(line: bytes, start: int, msgs: list[Any], first: int, pos: int, ends: list[int]) -> bool:
    """Append the ends of ``msgs[first:]`` to ``ends``, the first of them
    starting at ``pos`` (after a comma unless it is message 0); False when
    the line does not hold them as compact JSON there."""
    for i in range(first, len(msgs)):
        if i:
            if line[pos:pos + 1] != b",":
                return False
            pos += 1
        try:
            enc = orjson.dumps(msgs[i])
        except TypeError:  # a value orjson refuses (a lone surrogate)
            return False
        if not line.startswith(enc, pos):
            return False
        pos += len(enc)
        ends.append(pos - start)
    return line[pos:pos + 1] == b"]"


def _whole(line: bytes) -> Parsed:
    rec = parse_record(line)
    msgs = _messages(rec)
    if not msgs:
        return Parsed(rec, line)
    try:
        first = orjson.dumps(msgs[0])
    except TypeError:
        return Parsed(rec, line)
    q = line.find(_KEY + first)
    if q < 0:
        return Parsed(rec, line)
    start = q + len(_KEY)
    ends: list[int] = []
    if not _place(line, start, msgs, 0, start, ends):
        return Parsed(rec, line)
    return Parsed(rec, line, start, ends)


def parse_after(line: bytes, ref: Parsed | None) -> Parsed:
    """``line`` parsed (:func:`~fidelity.scan.records.parse_record`, raising
    its :class:`~fidelity.scan.records.BadLine`), reusing what it shares with
    the earlier line ``ref``."""
    if ref is None or ref.start < 0 or not ref.ends:
        return _whole(line)
    head = memoryview(ref.line)[ref.start - len(_KEY):ref.start + ref.ends[0]]
    # the envelope ahead of the body is usually as long as the earlier line's
    q = ref.start - len(_KEY) if line.startswith(head, ref.start - len(_KEY)) else line.find(head)
    if q < 0:
        return _whole(line)
    start = q + len(_KEY)
    j = _shared_messages(line, start, ref)
    cut = start + ref.ends[j - 1]
    if line[cut:cut + 1] not in (b",", b"]"):
        return _whole(line)
    try:
        rec = parse_record(line[:start] + _MARK + line[cut:])
    except Exception:  # noqa: BLE001 -- the whole parse says what is wrong, or succeeds
        return _whole(line)
    msgs = _messages(rec)
    if not msgs or type(msgs[0]) is not float or msgs[0] != _MARK_VALUE:
        return _whole(line)  # the cut landed in another array
    ref_msgs = ref.rec.body["messages"]
    full = ref_msgs[:j] + msgs[1:]
    rec.body["messages"] = full
    ends = ref.ends[:j]
    if not _place(line, start, full, j, cut, ends):
        return Parsed(rec, line, reused=j)
    return Parsed(rec, line, start, ends, reused=j)
