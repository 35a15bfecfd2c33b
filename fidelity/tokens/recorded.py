"""Recorded model requests paired with the usage the provider returned.

``fidelity tokens-check`` compares fidelity's prompt-token prediction with
what the provider billed; this module finds the pairs in a folder of
recorded traffic, whatever recorded it:

==================  ==========================================================
vcrpy cassettes     ``*.yaml`` / ``*.yml`` / cassette ``*.json``: each
                    interaction's request body (raw ``body`` or
                    pydantic-ai's ``parsed_body``) and response body (gzip
                    bytes are inflated)
HAR 1.2             ``*.har``: ``request.postData.text`` and
                    ``response.content.text`` (base64 when ``encoding`` says so)
claude-trace        ``*.jsonl`` whose lines hold ``{"request": {"url", "body"},
                    "response": {"body" | "body_raw"}}`` (claude-trace's log)
snapshot folders    ``*.json`` request snapshots whose metadata carries
                    ``usage`` (the shared snapshot convention)
==================  ==========================================================

DeepSeek Harness logs are read by :mod:`fidelity.calibrate` (their requests
are rebuilt, not recorded); ``tokens-check`` adds them from there.

Secrets never matter here: only bodies are read, headers are not kept.
"""

from __future__ import annotations

import base64
import gzip
import re
import zlib
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import orjson

from ..errors import InputError
from ..jsonio import read_bytes
from ..traffic.usage import from_response

__all__ = ["RecordedRequest", "iter_recorded", "read_file"]


@dataclass(frozen=True)
class RecordedRequest:
    """One request body with the prompt tokens its response reported."""

    path: str
    where: str
    url: str | None
    body: bytes
    usage: dict[str, Any]
    #: the body bytes are not the wire bytes (pydantic-ai's sorted ``parsed_body``)
    reserialised: bool = False
    #: the model the response says served the request (``None``: not said)
    response_model: str | None = None


def iter_recorded(folder: str | Path) -> Iterator[RecordedRequest]:
    """Every request with reported prompt usage under ``folder`` (a file or a
    folder searched recursively, in sorted path order)."""
    root = Path(folder)
    if not root.exists():
        raise InputError("no such file or folder", path=root)
    files = [root] if root.is_file() else sorted(p for p in root.rglob("*") if p.is_file())
    for path in files:
        yield from read_file(path)


def read_file(path: Path) -> Iterator[RecordedRequest]:
    name = path.name.lower()
    if name.endswith((".yaml", ".yml")):
        yield from _cassette(path, _load_yaml(path))
    elif name.endswith(".har"):
        yield from _har(path, _json(path))
    elif name.endswith(".snapshot"):
        yield from _snapshot(path)
    elif name.endswith(".jsonl"):
        yield from _trace(path)
    elif name.endswith(".json"):
        head = read_bytes(path)[:512]
        if b'"interactions"' in head:
            yield from _cassette(path, _json(path))
        elif b'"log"' in head[:200]:
            yield from _har(path, _json(path))



def _json(path: Path) -> Any:
    try:
        return orjson.loads(read_bytes(path))
    except orjson.JSONDecodeError as exc:
        raise InputError(f"not valid JSON: {exc}", path=path) from None


def _load_yaml(path: Path) -> Any:
    from ..capture.importers.cassette import _load

    return _load(path)


def _inflate(data: bytes) -> bytes:
    if data[:2] == b"\x1f\x8b":
        try:
            return gzip.decompress(data)
        except (OSError, EOFError, zlib.error):
            return data
    if data[:1] not in (b"{", b"[", b"e", b"d", b":", b" ", b"\n") and data:
        try:
            return zlib.decompress(data)
        except zlib.error:
            pass
        try:
            import brotli

            return brotli.decompress(data)  # type: ignore[no-any-return]  # brotli ships no type hints
        except Exception:  # not brotli, or brotli not installed
            return data
    return data


_MODEL = re.compile(rb'"model"\s*:\s*"([^"]{1,200})"')


def response_model(body: bytes) -> str | None:
    """The ``model`` a response names first (JSON or SSE), if any."""
    m = _MODEL.search(body, 0, 65536)
    return m.group(1).decode("utf-8", "replace") if m else None


def _body_bytes(holder: dict[str, Any]) -> tuple[bytes | None, bool]:
    """A cassette request/response body: bytes and whether they were re-serialised."""
    if "parsed_body" in holder and holder["parsed_body"] is not None:
        return orjson.dumps(holder["parsed_body"]), True
    raw = holder.get("body")
    if isinstance(raw, dict):
        raw = raw.get("string")
    if isinstance(raw, str):
        return raw.encode("utf-8", "surrogatepass"), False
    if isinstance(raw, bytes):
        return _inflate(raw), False
    return None, False


def _content_type(headers: Any) -> str | None:
    if isinstance(headers, dict):
        for k, v in headers.items():
            if str(k).lower() == "content-type":
                v = v[0] if isinstance(v, list) and v else v
                return v.decode("latin-1") if isinstance(v, bytes) else str(v)
    return None


def _cassette(path: Path, doc: Any) -> Iterator[RecordedRequest]:
    if not isinstance(doc, dict) or not isinstance(doc.get("interactions"), list):
        return
    for i, inter in enumerate(doc["interactions"]):
        if not isinstance(inter, dict):
            continue
        req, resp = inter.get("request"), inter.get("response")
        if not isinstance(req, dict) or not isinstance(resp, dict):
            continue
        body, reser = _body_bytes(req)
        out, _ = _body_bytes(resp)
        if not body or not out or body.lstrip()[:1] != b"{":
            continue
        usage = from_response("", _content_type(resp.get("headers")), out)
        if usage is None or usage.get("prompt") is None:
            continue
        uri = req.get("uri") if isinstance(req.get("uri"), str) else None
        yield RecordedRequest(str(path), f"/interactions/{i}", uri, body, usage, reser, response_model(out))


def _har(path: Path, doc: Any) -> Iterator[RecordedRequest]:
    entries = doc.get("log", {}).get("entries") if isinstance(doc, dict) and isinstance(doc.get("log"), dict) else None
    for i, entry in enumerate(entries or ()):
        if not isinstance(entry, dict):
            continue
        req, resp = entry.get("request") or {}, entry.get("response") or {}
        text = (req.get("postData") or {}).get("text") if isinstance(req, dict) else None
        content = resp.get("content") if isinstance(resp, dict) else None
        if not isinstance(text, str) or not isinstance(content, dict) or not isinstance(content.get("text"), str):
            continue
        out = content["text"].encode("utf-8", "surrogatepass")
        if content.get("encoding") == "base64":
            out = _inflate(base64.b64decode(content["text"]))
        usage = from_response("", content.get("mimeType"), out)
        if usage is None or usage.get("prompt") is None:
            continue
        yield RecordedRequest(str(path), f"/log/entries/{i}", req.get("url"), text.encode("utf-8", "surrogatepass"),
                              usage, False, response_model(out))


def _trace(path: Path) -> Iterator[RecordedRequest]:
    """claude-trace JSONL: ``{"request": {"url", "body"}, "response": {"body"|"body_raw"}}`` per line."""
    for n, line in enumerate(read_bytes(path).splitlines(), start=1):
        if not line.strip():
            continue
        try:
            rec = orjson.loads(line)
        except orjson.JSONDecodeError:
            return  # not a trace (a DeepSeek Harness log or another JSONL): not ours
        if not isinstance(rec, dict) or not isinstance(rec.get("request"), dict) or not isinstance(rec.get("response"), dict):
            return
        req, resp = rec["request"], rec["response"]
        body = req.get("body")
        body_b = orjson.dumps(body) if isinstance(body, (dict, list)) else (body.encode() if isinstance(body, str) else None)
        out = resp.get("body_raw") if isinstance(resp.get("body_raw"), str) else resp.get("body")
        out_b = orjson.dumps(out) if isinstance(out, (dict, list)) else (out.encode() if isinstance(out, str) else None)
        if not body_b or not out_b:
            continue
        usage = from_response("", None, out_b)
        if usage is None or usage.get("prompt") is None:
            continue
        yield RecordedRequest(str(path), f"line {n}", req.get("url"), body_b, usage, isinstance(body, (dict, list)),
                              response_model(out_b))


def _snapshot(path: Path) -> Iterator[RecordedRequest]:
    """A request snapshot whose metadata line carries ``usage`` (shared convention)."""
    from ..capture import snapshot

    data = read_bytes(path)
    if not snapshot.is_snapshot(data):
        return
    snap = snapshot.loads(data, path=path)
    meta = orjson.loads(data[: data.find(b"\n")])
    usage = meta.get("usage")
    if isinstance(usage, dict) and isinstance(usage.get("prompt"), int):
        yield RecordedRequest(str(path), "", snap.url, snap.body, usage, not snap.body_exact)
