"""Map a byte offset in a wire body to the RFC 6901 pointer of the deepest JSON
value that holds it (:func:`pointer_at`), skipping siblings with the wire
package's byte scanner."""

from __future__ import annotations

from ..jsonbytes import escape_token, iter_elements, iter_members, skip_value, skip_ws

__all__ = ["pointer_at"]


def pointer_at(body: bytes, offset: int) -> str:
    """Pointer of the deepest value in ``body`` whose span contains ``offset``; an
    offset on a key, comma or bracket belongs to the enclosing value, one past the end to ``""``."""
    start = skip_ws(body, 0)
    end = skip_value(body, start)
    path = ""
    while start <= offset < end:
        opener = body[start : start + 1]
        child: tuple[str, int, int] | None = None
        if opener == b"{":
            for member in iter_members(body, start):
                if member.value_start <= offset < member.end:
                    child = (escape_token(member.key), member.value_start, member.end)
                    break
                if member.start > offset:
                    break
        elif opener == b"[":
            for index, (lo, hi) in enumerate(iter_elements(body, start)):
                if lo <= offset < hi:
                    child = (str(index), lo, hi)
                    break
                if lo > offset:
                    break
        if child is None:
            break
        path += "/" + child[0]
        start, end = child[1], child[2]
    return path


