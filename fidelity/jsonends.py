"""Where each object and array of a JSON body ends: one pass per body,
remembered for the last bodies (the byte scanner :mod:`fidelity.jsonbytes`
skips containers with it). A strict-JSON body takes the fast pass
(:func:`_strict_ends`); any other is walked (:func:`walk`) under the grammar
of ``json.JSONDecoder(strict=False)``.
"""

from __future__ import annotations

import re
import threading
from collections import OrderedDict

import orjson

from .errors import InputError

__all__ = ["container_ends", "walk"]

# Inside a container the walk accepts exactly what ``json.JSONDecoder(strict=False)``
# accepts (the decoder the scanner used before, see :func:`walk`): strings with raw
# control characters but only the escapes of RFC 8259 section 7 (``\uXXXX``
# with four hex digits), numbers of section 6, the literals, and NaN, Infinity
# and -Infinity (the ``json`` module's extension, ``parse_constant``).
_W = rb"[ \t\n\r]*+"
_S = rb'"[^"\\]*+(?:\\(?:["\\/bfnrt]|u[0-9a-fA-F]{4})[^"\\]*+)*+"'
_FLAT = (rb"(?:" + _S + rb"|-?(?:0|[1-9][0-9]*+)(?:\.[0-9]++)?(?:[eE][-+]?[0-9]++)?"
         rb"|true|false|null|NaN|Infinity|-Infinity)")
#: members of an object with flat values up to its end (group 1) or to a
#: nested container's opener (group 2); possessive: a member followed by ','
#: is never the last one
_MEMBERS = re.compile(rb"(?:" + _W + _S + _W + rb":" + _W + _FLAT + _W + rb",)*+" + _W + _S + _W + rb":" + _W
                      + rb"(?:" + _FLAT + _W + rb"(\})|([\[{]))")
#: the same for the elements of an array
_ELEMENTS = re.compile(rb"(?:" + _W + _FLAT + _W + rb",)*+" + _W + rb"(?:" + _FLAT + _W + rb"(\])|([\[{]))")
#: what may follow a nested container: a separator or a closer
_AFTER = re.compile(_W + rb"([,\]}])")
_EMPTY = {0x7B: re.compile(_W + rb"\}"), 0x5B: re.compile(_W + rb"\]")}
_CLOSER = {0x7B: 0x7D, 0x5B: 0x5D}
_WS = re.compile(rb"[ \t\n\r]*")


def _bad(pos: int) -> InputError:
    return InputError(f"malformed JSON at byte {pos}: malformed or unterminated container")


def container_ends(body: bytes) -> dict[int, int] | None:
    """``{start: end}`` of every object and array of the JSON value at the
    start of ``body``; ``None`` when that value is not a valid container.
    Remembered for the last bodies, up to :data:`_ENDS_BYTES`."""
    hit = _ENDS.get(body)
    if hit is not None or body in _ENDS:
        try:
            _ENDS.move_to_end(body)
        except KeyError:  # another thread dropped it meanwhile
            pass
        return hit
    start = _WS.match(body).end()  # type: ignore[union-attr]
    found: dict[int, int] | None = None
    if body[start : start + 1] in (b"{", b"["):
        found = _strict_ends(body, start)
        if found is None:
            try:
                found = walk(body, start)[1]
            except InputError:
                found = None
    with _ENDS_LOCK:
        _ENDS[body] = found
        _ENDS_SIZE[0] += len(body)
        while len(_ENDS) > 1 and (len(_ENDS) > 32 or _ENDS_SIZE[0] > _ENDS_BYTES):
            _ENDS_SIZE[0] -= len(_ENDS.popitem(last=False)[0])
    return found


#: up to the next bracket outside a string, in a body whose escaped quotes and
#: backslashes are blanked (:func:`_strict_ends`)
_NEXT_BRACKET = re.compile(rb'(?:[^"\[\]{}]++|"[^"]*+")*+[\[\]{}]')


def _strict_ends(body: bytes, start: int) -> dict[int, int] | None:
    """:func:`walk`'s ends, faster, for a body ``orjson`` reads (strict JSON),
    else ``None``: with escaped backslashes, then escaped quotes, blanked in
    place, every quote left delimits a string and every bracket outside one
    opens or closes a container."""
    try:
        orjson.loads(body)
    except orjson.JSONDecodeError:
        return None
    blanked = body.replace(b"\\\\", b"\0\0").replace(b'\\"', b"\0\0")
    ends: dict[int, int] = {}
    opened: list[int] = []
    for match in _NEXT_BRACKET.finditer(blanked, start):
        end = match.end()
        if blanked[end - 1] in b"[{":
            opened.append(end - 1)
        else:
            ends[opened.pop()] = end
            if not opened:
                return ends
    return None  # not reached for valid JSON


#: body -> its containers' ends (oldest first), and the bytes of the bodies held
_ENDS: OrderedDict[bytes, dict[int, int] | None] = OrderedDict()
_ENDS_SIZE = [0]
_ENDS_BYTES = 32 << 20
_ENDS_LOCK = threading.Lock()


def walk(body: bytes, pos: int) -> tuple[int, dict[int, int]]:
    """The end of the container opening at ``pos`` and the ends of all the
    containers in it (its own included), one regex match per run of flat
    members or elements. Accepts and refuses what
    ``json.JSONDecoder(strict=False).raw_decode`` of the latin-1 text does
    (the tests' oracle), except that nesting is bounded by memory only and an
    integer past 4,300 digits is not refused."""
    ends: dict[int, int] = {}
    starts = [pos]
    kinds = [body[pos]]
    pos += 1
    opened = True  # pos is just past an opener (else just past a ',')
    members, elements, after = _MEMBERS.match, _ELEMENTS.match, _AFTER.match
    while True:
        kind = kinds[-1]
        empty = _EMPTY[kind].match(body, pos) if opened else None
        if empty is not None:
            pos = empty.end()
        else:
            run = (members if kind == 0x7B else elements)(body, pos)
            if run is None:
                raise _bad(pos)
            pos = run.end()
            if run.lastindex == 2:  # a nested container opens
                starts.append(pos - 1)
                kinds.append(body[pos - 1])
                opened = True
                continue
        ends[starts.pop()] = pos  # the container on top just closed
        kinds.pop()
        while starts:  # its parent's separator, or the parent's closer too
            sep = after(body, pos)
            if sep is None:
                raise _bad(pos)
            pos = sep.end()
            if body[pos - 1] == 0x2C:  # ,
                break
            if body[pos - 1] != _CLOSER[kinds[-1]]:
                raise _bad(pos - 1)
            ends[starts.pop()] = pos
            kinds.pop()
        if not starts:
            return pos, ends
        opened = False
