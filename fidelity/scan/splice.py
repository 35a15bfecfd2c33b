"""Parse a log line against an earlier line of the same session: only the
bytes after their shared history are parsed (the shared messages, and
unchanged ``tools`` / ``system`` members, are cut, the rest parsed and the
earlier line's objects put back), so the record equals a whole parse.
Whatever does not fit is parsed whole. docs/scan.md, "Performance"."""

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
#: body members cut when unchanged: (name, key bytes, marker)
_MEMBERS = (("tools", b'"tools":', b"-7.78e-300"), ("system", b'"system":', b"-7.79e-300"))


@dataclass
class Parsed:
    """A parsed line and where its body's messages sit in it: ``start`` (the
    first message's offset, ``-1``: unknown) and ``ends`` (relative to ``start``)."""

    rec: Record
    line: bytes
    start: int = -1
    ends: list[int] = field(default_factory=list)
    #: how many messages came from the earlier line (0: parsed whole)
    reused: int = 0
    #: where the compact values of the body's ``tools`` and ``system`` sit in ``line``
    members: dict[str, tuple[int, int]] = field(default_factory=dict)
    #: the span of ``line`` holding the earlier line's shared messages, and
    #: whether the earlier line was searched for server tool marks and held none
    shared: tuple[int, int] = (0, 0)
    shared_clean: bool = False
    #: whether ``line`` holds a server tool's call or result (``None``: not searched yet)
    marks: bool | None = None


def _shared_messages(line: bytes, start: int, ref: Parsed, first: int = 0, delta: int = 0) -> int:
    """``j``: ``line`` holds ``ref``'s messages ``first`` to ``j - 1`` byte
    for byte, ``delta`` bytes further from ``start`` than ``ref`` holds them
    from its own (at least message ``first``, which the caller found there):
    a binary search over message ends, one ``memcmp`` a step."""
    mv = memoryview(ref.line)[ref.start:]
    ends = ref.ends
    n = len(ends)
    base = ends[first - 1] if first else 0
    at = start + base + delta
    if line.startswith(mv[base:ends[-1]], at):
        return n
    # the usual other case: all but the last (a breakpoint moved off it)
    if n > first + 2 and line.startswith(mv[base:ends[-2]], at):
        return n - 1
    lo, hi = first + 1, n - 1 if n > first + 2 else n  # messages [first, lo) are shared, [first, hi) are not
    while hi - lo > 1:
        mid = (lo + hi) // 2
        if line.startswith(mv[ends[lo - 1]:ends[mid - 1]], start + ends[lo - 1] + delta):
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
    return Parsed(rec, line, start, ends, 0, _member_spans(line, rec.body, {}))


def _member_spans(line: bytes, body: dict[str, Any], known: dict[str, tuple[int, int]]) -> dict[str, tuple[int, int]]:
    """``known`` and the spans of the other cut members of ``body`` in
    ``line`` (where ``"name":`` followed by the value's compact JSON first
    occurs; :func:`parse_after` checks that a cut there lands on the member)."""
    out = dict(known)
    for name, key, _ in _MEMBERS:
        if name in out or name not in body:
            continue
        try:
            enc = orjson.dumps(body[name])
        except TypeError:
            continue
        at = line.find(key + enc)
        if at >= 0:
            out[name] = (at + len(key), at + len(key) + len(enc))
    return out


def parse_after(line: bytes, ref: Parsed | None) -> Parsed:
    """``line`` parsed (:func:`~fidelity.scan.records.parse_record`, raising
    its :class:`~fidelity.scan.records.BadLine`), reusing what it shares with
    the earlier line ``ref``."""
    if ref is None or ref.start < 0 or not ref.ends:
        return _whole(line)
    head = memoryview(ref.line)[ref.start - len(_KEY):ref.start + ref.ends[0]]
    # the envelope ahead of the body is usually as long as the earlier line's
    q = ref.start - len(_KEY) if line.startswith(head, ref.start - len(_KEY)) else line.find(head)
    first = delta = 0
    if q >= 0:
        start = q + len(_KEY)
        opening = start  # where the cut starts
    else:
        # the first message changed (a timestamp in a system prompt): the
        # second is looked for, comma included, after the array's opening
        if len(ref.ends) < 2:
            return _whole(line)
        q = ref.start - len(_KEY) if line.startswith(_KEY, ref.start - len(_KEY)) else line.find(_KEY)
        if q < 0:
            return _whole(line)
        start = q + len(_KEY)
        opening = line.find(memoryview(ref.line)[ref.start + ref.ends[0]:ref.start + ref.ends[1]], start)
        if opening < 0:
            return _whole(line)
        first, delta = 1, opening - start - ref.ends[0]
        opening += 1  # the comma stays
    j = _shared_messages(line, start, ref, first, delta)
    cut = start + ref.ends[j - 1] + delta
    if line[cut:cut + 1] not in (b",", b"]"):
        return _whole(line)
    # (value start, value end, marker, name) of each piece replaced by a marker
    pieces = [(opening, cut, _MARK, "")]
    for name, key, mark in _MEMBERS:
        span = ref.members.get(name)
        if span is None:
            continue
        a, b = span
        # looked for where it was: as far from the line's start when it was
        # ahead of the messages, as far from the line's end when behind them
        if b <= ref.start:
            at, fits = a, b <= start - len(_KEY)
        else:
            at = a + len(line) - len(ref.line)
            fits = at - len(key) >= cut
        if fits and line.startswith(key, at - len(key)) and line.startswith(memoryview(ref.line)[a:b], at):
            pieces.append((at, at + b - a, mark, name))
    pieces.sort()
    out: list[bytes] = []
    pos = 0
    for a, b, mark, _ in pieces:
        if a < pos:  # overlaps the piece before (one member's bytes inside another's)
            return _whole(line)
        out += (line[pos:a], mark)
        pos = b
    out.append(line[pos:])
    try:
        rec = parse_record(b"".join(out))
    except Exception:  # noqa: BLE001 -- the whole parse says what is wrong, or succeeds
        return _whole(line)
    msgs = _messages(rec)
    if not msgs or len(msgs) <= first or type(msgs[first]) is not float or msgs[first] != _MARK_VALUE:
        return _whole(line)  # the cut landed in another array
    ends = [e + delta for e in ref.ends[first:j]]
    if first:  # the first message is the line's own: it must fill the array up to the cut
        try:
            enc = orjson.dumps(msgs[0])
        except TypeError:  # a value orjson refuses (a lone surrogate)
            return _whole(line)
        if opening - 1 - start != len(enc) or not line.startswith(enc, start):
            return _whole(line)
        ends.insert(0, len(enc))
    body, ref_body = rec.body, ref.rec.body
    kept: dict[str, tuple[int, int]] = {}
    for a, b, mark, name in pieces:
        if name:
            got = body.get(name)
            if type(got) is not float or got != float(mark):
                return _whole(line)  # the cut landed elsewhere than the body's member
            body[name] = ref_body[name]
            kept[name] = (a, b)
    ref_msgs = ref_body["messages"]
    full = msgs[:first] + ref_msgs[first:j] + msgs[first + 1:]
    body["messages"] = full
    clean = ref.marks is False
    if not _place(line, start, full, j, cut, ends):
        return Parsed(rec, line, reused=j - first, shared=(opening, cut), shared_clean=clean)
    return Parsed(rec, line, start, ends, j - first, _member_spans(line, body, kept), (opening, cut), clean)
