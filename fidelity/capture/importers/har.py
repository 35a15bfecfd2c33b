"""HAR 1.2 archives: browser devtools exports and mitmproxy's ``savehar``.

HAR 1.2 (http://www.softwareishard.com/blog/har-12-spec/) keeps each
request in ``log.entries[i].request`` (``method``, ``url``, ``headers``,
``postData`` with ``text``/``params``, ``bodySize``, ``-1`` when unknown).
The body is the UTF-8 encoding of ``postData.text`` (or base64-decoded for a
non-standard ``encoding: "base64"``), marked not exact when ``bodySize``
disagrees or only form ``params`` were kept; HTTP/2 pseudo-headers are dropped."""

from __future__ import annotations

import base64
import binascii
from pathlib import Path
from typing import Any

from ...errors import InputError
from ...jsonio import loads
from ..classify import classify
from ._base import Imported, iso_time, read_source, request_body

__all__ = ["read_har"]


def read_har(path: str | Path) -> Imported:
    """Every model request (a JSON body with ``messages``/``contents``/
    ``input``) of a HAR file, in entry order."""
    doc = loads(read_source(path), path=path)
    log = doc.get("log") if isinstance(doc, dict) else None
    if not isinstance(log, dict) or not isinstance(log.get("entries"), list):
        raise InputError("not a HAR file (expected an object with log.entries)", path=path)
    version = str(log.get("version", ""))
    out = Imported(source=f"har:{Path(path).name}")
    if version and not version.startswith("1."):
        out.warnings.append(f"HAR version {version!r}; this importer follows HAR 1.2")
    for i, entry in enumerate(log["entries"]):
        where = f"/log/entries/{i}"
        request = entry.get("request") if isinstance(entry, dict) else None
        if not isinstance(request, dict):
            raise InputError("entry has no request object", path=path, pointer=where)
        post = request.get("postData")
        url = request.get("url")
        method = str(request.get("method") or "POST")
        if not isinstance(post, dict) or not isinstance(post.get("text"), str) or not post["text"]:
            out.skip(classify(method, url if isinstance(url, str) else None, {}, b"").reason)
            continue
        notes: list[str] = []
        exact = True
        if post.get("encoding") == "base64":
            try:
                body = base64.b64decode(post["text"], validate=True)
            except (binascii.Error, ValueError):
                raise InputError("postData.text is not valid base64", path=path, pointer=where + "/request/postData") from None
        else:
            body = post["text"].encode("utf-8", "surrogatepass")
        headers = _headers(request.get("headers"), path, where)
        encoding = next((v for k, v in headers if k.lower() == "content-encoding"), None)
        ready, why = request_body(body, encoding, method, url if isinstance(url, str) else None, headers, notes)
        if ready is None:
            out.skip(why or "not a model request")
            continue
        body = ready
        size = request.get("bodySize")
        if isinstance(size, int) and size >= 0 and size != len(body) and not encoding:
            exact = False
            notes.append(
                f"HAR bodySize is {size} bytes but postData.text is {len(body)}: the recorder decoded or "
                "re-encoded the body, so these are not the exact bytes sent"
            )
        if not isinstance(url, str):
            raise InputError("request has no url", path=path, pointer=where + "/request")
        snap = out.add(
            method=method,
            url=url,
            headers=headers,
            body=body,
            where=where,
            notes=notes,
            body_exact=exact,
            time=iso_time(entry.get("startedDateTime")),
            response=_response(entry.get("response")),
        )
        if snap is None:  # set apart (a malformed URL): the warnings say why
            continue
        if not exact:
            out.warnings.append(f"{where}: {notes[-1]}")
    if not out.snapshots:
        out.warnings.append("no model requests found (entries with a JSON body holding messages/contents/input)")
    return out


def _response(response: Any) -> tuple[dict[str, str], bytes] | None:
    """``(headers, body)`` of ``response.content.text`` (base64 when
    ``encoding`` says so) for the usage it reported. HAR keeps the decoded
    content, so its Content-Encoding header is not applied."""
    if not isinstance(response, dict) or not isinstance(response.get("content"), dict):
        return None
    content = response["content"]
    text = content.get("text")
    if not isinstance(text, str) or not text:
        return None
    body = text.encode("utf-8", "surrogatepass")
    if content.get("encoding") == "base64":
        try:
            body = base64.b64decode(text)
        except (binascii.Error, ValueError):
            return None
    mime = content.get("mimeType")
    return {"content-type": mime if isinstance(mime, str) else ""}, body


def _headers(value: Any, path: str | Path, where: str) -> list[tuple[str, str]]:
    if value is None:
        return []
    if not isinstance(value, list):
        raise InputError("request.headers must be a list", path=path, pointer=where + "/request/headers")
    out = []
    for h in value:
        if isinstance(h, dict) and isinstance(h.get("name"), str):
            if h["name"].startswith(":"):
                continue  # HTTP/2 pseudo-header
            out.append((h["name"], str(h.get("value", ""))))
    return out
