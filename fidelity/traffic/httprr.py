"""Go httprr traces: HTTP requests and responses as sent on the wire.

The format (``rsc.io/httprr``, https://pkg.go.dev/rsc.io/httprr, used by
tmc/langchaingo's tests): a first line ``httprr trace v1``, then one
record per exchange: a line ``N M`` (two decimal byte counts), the request
as Go's ``Request.WriteProxy`` writes it (``N`` bytes: request line with
the absolute URL, headers, blank line, body) and the response as
``Response.Write`` writes it (``M`` bytes). Bodies may be chunked
(``Transfer-Encoding: chunked``) and compressed (``Content-Encoding``).
"""

from __future__ import annotations

from pathlib import Path

from ..errors import InputError

__all__ = ["MAGIC", "Message", "records", "message"]

MAGIC = b"httprr trace v1\n"

#: (first line, headers with lower-case names in recorded order, body with any chunking removed)
Message = tuple[str, list[tuple[str, str]], bytes]


def records(data: bytes, path: str | Path) -> list[tuple[bytes, bytes]]:
    """The (request, response) byte pairs of a trace, in recorded order."""
    if not data.startswith(MAGIC):
        raise InputError("not an httprr trace (the first line is not 'httprr trace v1')", path=path)
    out: list[tuple[bytes, bytes]] = []
    pos = len(MAGIC)
    while pos < len(data):
        n = len(out) + 1
        end = data.find(b"\n", pos, pos + 64)
        sizes = data[pos:end].split(b" ") if end >= 0 else []
        if len(sizes) != 2 or not all(s.isdigit() for s in sizes):
            raise InputError(f"httprr record {n}: expected a line of two byte counts 'N M'", path=path)
        req_len, resp_len = int(sizes[0]), int(sizes[1])
        start = end + 1
        if start + req_len + resp_len > len(data):
            raise InputError(f"httprr record {n}: truncated ({req_len + resp_len} bytes announced, "
                             f"{len(data) - start} left)", path=path)
        out.append((data[start:start + req_len], data[start + req_len:start + req_len + resp_len]))
        pos = start + req_len + resp_len
    return out


def _dechunk(body: bytes, path: str | Path) -> bytes:
    """A chunked body's data (RFC 9112 section 7.1); trailers are dropped."""
    out = bytearray()
    pos = 0
    while True:
        end = body.find(b"\r\n", pos)
        size_text = body[pos:end].split(b";", 1)[0].strip() if end >= 0 else b""
        try:
            size = int(size_text, 16)
        except ValueError:
            raise InputError("httprr: a chunked body has a malformed chunk size", path=path) from None
        if size == 0:
            return bytes(out)
        start = end + 2
        if start + size > len(body):
            raise InputError("httprr: a chunked body is truncated", path=path)
        out += body[start:start + size]
        pos = start + size + 2


def message(raw: bytes, path: str | Path) -> Message:
    """One HTTP/1.x message: its first line, headers and body."""
    head, sep, body = raw.partition(b"\r\n\r\n")
    if not sep:  # a scrubber that rewrote headers with bare newlines
        head, sep, body = raw.partition(b"\n\n")
    lines = head.split(b"\n")
    headers = []
    for line in lines[1:]:
        name, colon, value = line.rstrip(b"\r").decode("latin-1").partition(":")
        if colon:
            headers.append((name.strip().lower(), value.strip()))
    if any(k == "transfer-encoding" and "chunked" in v.lower() for k, v in headers):
        body = _dechunk(body, path)
    return lines[0].rstrip(b"\r").decode("latin-1"), headers, body
