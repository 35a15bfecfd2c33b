"""Every recording format, read into :class:`~fidelity.traffic.exchange.Exchange`
lists, and the one listing of what a folder holds.

Formats: ``vcr`` (vcrpy and go-vcr), ``ruby-vcr`` (:mod:`.rubyvcr`), ``har`` (Polly.js's too),
``httprr`` (:mod:`.httprr`), ``jsonl``
(claude-trace lines are recordings, other lines request logs), ``snapshots``,
``dsh``, ``parquet`` (docs/replay.md). :func:`list_sources` says which a path
holds (folders searched recursively; a folder of ``*.snapshot`` files is one
source); :func:`read` reads one (:func:`entries`: with the entries that hold
no request body, which ``fidelity import`` counts as skipped). Readers hand
the facts to :func:`fidelity.traffic.apart.exchange` and decide nothing; a
recording whose structure is broken is an :class:`~fidelity.errors.InputError`."""

from __future__ import annotations

import base64
import binascii
import json
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .._registry import Registry
from ..errors import InputError
from ..jsonio import loads
from .apart import exchange
from .exchange import Exchange, header, http_date_seconds, iso_seconds
from .files import load_cassette, read_source
from .usage import decode_body, from_response, http_status, normalise

__all__ = ["Source", "list_sources", "kind_of", "entries", "read", "read_all", "reported", "READ_KINDS", "response_model"]

#: kinds :func:`read` turns into exchanges (the others are read by their own commands' readers)
READ_KINDS = ("vcr", "ruby-vcr", "har", "httprr", "jsonl", "snapshots")


@dataclass(frozen=True)
class Source:
    """One recording: its kind and path (a file, or a snapshot folder)."""

    kind: str
    path: Path


def _name(path: Path) -> str:
    name = path.name.lower()
    return name[:-3] if name.endswith(".gz") else name


def _head(path: Path) -> bytes:
    """The first 4 KiB of a file, gunzipped when it is a ``.gz`` file
    (only those bytes are decompressed; an unreadable file has none)."""
    import gzip
    import zlib

    try:
        with (gzip.open(path, "rb") if path.name.lower().endswith(".gz") else open(path, "rb")) as fh:
            return fh.read(4096)
    except (OSError, EOFError, zlib.error):
        return b""


def kind_of(path: Path) -> str | None:
    """The kind of one file (``None``: not a recording)."""
    name = _name(path)
    if name.endswith(".snapshot"):
        return "snapshots"
    if name.endswith(".har"):
        return "har"
    if name.endswith(".httprr"):
        return "httprr"
    if name.endswith(".parquet"):
        return "parquet"
    if name.endswith((".yaml", ".yml")):
        from .rubyvcr import is_ruby_vcr

        return "ruby-vcr" if is_ruby_vcr(_head(path)) else "vcr"
    if name.endswith((".jsonl", ".ndjson", ".log")):
        first = _head(path).split(b"\n", 1)[0]
        if b'"parentSession"' in first or b'"type":"session"' in first.replace(b" ", b""):
            return "dsh"
        return "jsonl"
    if name.endswith(".json"):
        head = _head(path)
        if b'"http_interactions"' in head:
            return "ruby-vcr"
        if b'"interactions"' in head:
            return "vcr"
        if b'"log"' in head[:200]:
            return "har"
    return None


def list_sources(path: str | Path) -> list[Source]:
    """The recordings under ``path`` (a file, or a folder searched
    recursively, hidden files left out), in path order; each folder that
    holds ``*.snapshot`` files is one ``snapshots`` source, listed first."""
    root = Path(path)
    if not root.exists():
        raise InputError("no such file or folder", path=root)
    if root.is_file():
        kind = kind_of(root)
        if kind == "snapshots":
            return [Source("snapshots", root.parent)]
        return [Source(kind or "unknown", root)]
    files = sorted(p for p in root.rglob("*") if p.is_file() and not any(
        part.startswith(".") for part in p.relative_to(root).parts))
    snap_dirs = sorted({p.parent for p in files if p.suffix == ".snapshot"})
    out = [Source("snapshots", d) for d in snap_dirs]
    for p in files:
        if p.suffix == ".snapshot":
            continue
        kind = kind_of(p)
        if kind is not None and not (kind != "vcr" and p.suffix == ".json" and p.parent in snap_dirs):
            out.append(Source(kind, p))
    return out


# -- readers ---------------------------------------------------------------------
# Each reader returns every entry of its recording, one Exchange each, with an empty body
# where the entry holds none (the importers count those as skipped); read() leaves them out.


def _unwrapped(value: Any, path: Path, pointer: str) -> Any:
    """A body kept as ``{"string": ...}`` (vcrpy, Ruby VCR) or as
    ``{"base64_string": ...}`` (``preserve_exact_body_bytes``: Betamax's
    ``cassette/util.py`` ``add_body``; Ruby VCR's ``lib/vcr/structs.rb``, wrapped
    at 60 characters), as its text or bytes; any other value as it is."""
    if isinstance(value, dict) and isinstance(value.get("base64_string"), str):
        try:
            return base64.b64decode("".join(value["base64_string"].split()), validate=True)
        except (binascii.Error, ValueError):
            raise InputError("a base64_string body is not base64", path=path, pointer=pointer) from None
    if isinstance(value, dict) and "string" in value:
        return value["string"]
    return value


def _text(value: Any) -> bytes | None:
    if isinstance(value, dict) and "string" in value:
        value = value["string"]
    if isinstance(value, bytes):
        return value
    if isinstance(value, str):
        return value.encode("utf-8", "surrogatepass")
    return None


def _parsed(value: Any) -> bytes | None:
    """pydantic-ai cassettes keep ``parsed_body`` (keys sorted): not the
    wire bytes, but the same content for token counts."""
    if isinstance(value, (dict, list)):
        return json.dumps(value, separators=(",", ":"), ensure_ascii=False).encode("utf-8", "surrogatepass")
    return None


def _decoded(body: bytes | None, headers: Any) -> bytes | None:
    if not body:
        return body
    try:
        return decode_body(body, header(headers, "content-encoding"))
    except InputError:  # a recorder that kept the decoded text beside the original header
        return body


def _sent(body: bytes, headers: Any) -> tuple[bytes, str | None]:
    """A request body as the model read it, decoded when it was sent with a
    ``Content-Encoding``, and that encoding (``None``: sent as it is, or not
    decodable, so kept as recorded)."""
    encoding = header(headers, "content-encoding")
    if not body or not encoding or encoding.strip().lower() in ("", "identity"):
        return body, None
    try:
        return decode_body(body, encoding), encoding
    except InputError:
        return body, None


def response_model(body: bytes | None) -> str | None:
    """The ``model`` a response names first (JSON or SSE), if any."""
    import re

    m = re.search(rb'"model"\s*:\s*"([^"]{1,200})"', body[:65536]) if body else None
    return m.group(1).decode("utf-8", "replace") if m else None


def _pairs(value: Any) -> tuple[tuple[str, str], ...]:
    """``{name: value or [values]}`` as ``(name, value)`` pairs in recorded order."""
    out = []
    for name, vals in value.items():
        for v in vals if isinstance(vals, list) else [vals]:
            out.append((str(name), v.decode("latin-1") if isinstance(v, bytes) else str(v)))
    return tuple(out)


def _compacted(body: bytes, length: int) -> bytes | None:
    """A JSON body a recorder re-indented (opentelemetry-python-contrib's
    ``PrettyPrintJSONBody`` cassette serializer), written again as ``json.dumps``
    writes it in the one form whose length is the ``Content-Length`` it was sent
    with; ``None`` when the body has that length already, is not JSON, or not
    exactly one form has it (an edited body stays as recorded)."""
    if len(body) == length or not body.lstrip().startswith((b"{", b"[")):
        return None
    try:
        obj = json.loads(body)
    except (ValueError, RecursionError):
        return None
    forms = {json.dumps(obj, separators=separators, ensure_ascii=ascii_only).encode("utf-8", "surrogatepass")
             for separators in ((",", ":"), (", ", ": ")) for ascii_only in (False, True)}
    fits = [text for text in forms if len(text) == length]
    return fits[0] if len(fits) == 1 else None  # two forms of that length: which was sent is unknown


def _interactions(path: Path, items: list[Any], date_of: Callable[[dict[str, Any], Any], Any],
                  at: str) -> list[Exchange]:
    """vcrpy, Ruby VCR and go-vcr interactions: ``{"request": {"method",
    "uri" (go-vcr: "url"), "headers", "body" | "parsed_body"}, "response":
    {...}}``; a ``body`` that is a mapping or a list is parsed JSON, as
    ``parsed_body`` is (the body's compact serialisation, ``reserialised``);
    go-vcr's ``content_length`` is the ``Content-Length`` header Go sent and
    its ``status`` Go's ``"200 OK"`` beside ``code``; a re-indented JSON body
    is restored by :func:`_compacted` (``reserialised``). A request without a
    URL or with a body of another type is an error."""
    out = []
    for i, inter in enumerate(items):
        where = f"{at}/{i}"
        req = inter.get("request") if isinstance(inter, dict) else None
        if not isinstance(req, dict):
            raise InputError("interaction has no request mapping", path=path, pointer=where + "/request")
        uri = req.get("uri", req.get("url"))
        if not isinstance(uri, str):
            raise InputError("request has no uri (go-vcr: url)", path=path, pointer=where + "/request")
        headers = req.get("headers")
        if headers is not None and not isinstance(headers, dict):
            raise InputError("request headers must be a mapping", path=path, pointer=where + "/request/headers")
        value = _unwrapped(req.get("body"), path, where + "/request/body")
        if value not in (None, "", b"") and not isinstance(value, (str, bytes, dict, list)):
            raise InputError(f"request body must be text or bytes, not {type(value).__name__}", path=path,
                             pointer=where + "/request/body")
        body, decoded = _sent(_text(value) or b"", headers)
        reser = False
        if not body and isinstance(value, (dict, list)):  # some pydantic-ai cassettes keep the parsed body here
            body, reser = _parsed(value) or b"", True
        elif not body and "parsed_body" in req:
            body, reser = _parsed(req.get("parsed_body")) or b"", True
        resp = inter.get("response")
        resp = resp if isinstance(resp, dict) else {}
        rheaders = resp.get("headers")
        rbody = (_decoded(_text(_unwrapped(resp.get("body"), path, where + "/response/body")), rheaders)
                 or _parsed(resp.get("parsed_body")))
        usage = from_response(None, header(rheaders, "content-type"), rbody) if rbody else None
        sent = req.get("content_length")  # go-vcr: http.Request.ContentLength, which Go sends as the header
        if isinstance(sent, int) and not isinstance(sent, bool) and sent > 0 and header(headers, "content-length") is None:
            headers = {**(headers or {}), "Content-Length": [str(sent)]}
        length = header(headers, "content-length")
        if body and not reser and not decoded and length is not None and length.strip().isdigit():
            restored = _compacted(body, int(length))
            if restored is not None:
                body, reser = restored, True
        out.append(exchange(str(path), i, body, url=uri, time=date_of(inter, resp), usage=usage,
                            status=http_status(resp.get("status")) or http_status(resp.get("code")),
                            session=str(path), where=where, reserialised=reser, response_model=response_model(rbody),
                            method=str(req.get("method") or "POST"), headers=headers,
                            pairs=_pairs(headers or {}), decoded=decoded, response=rbody))
    return out


def _vcr(path: Path) -> list[Exchange]:
    doc = load_cassette(path)
    if isinstance(doc, dict) and isinstance(doc.get("requests"), list) and isinstance(doc.get("responses"), list):
        # langchain's standard tests write vcrpy's cassette dict as it is (two parallel lists, gzipped
        # YAML): langchain-ai/langchain, libs/standard-tests/langchain_tests/conftest.py, CustomSerializer
        if len(doc["requests"]) != len(doc["responses"]):
            raise InputError(f"vcrpy cassette with {len(doc['requests'])} requests but "
                             f"{len(doc['responses'])} responses", path=path)
        doc = {"interactions": [{"request": q, "response": r} for q, r in zip(doc["requests"], doc["responses"])]}
    if not isinstance(doc, dict) or not isinstance(doc.get("interactions"), list):
        raise InputError("not a vcrpy cassette (expected a mapping with an interactions list, "
                         "or requests and responses lists)", path=path)
    return _interactions(path, doc["interactions"], lambda inter, resp: http_date_seconds(
        header(resp.get("headers"), "date")), "/interactions")


def _ruby_vcr(path: Path) -> list[Exchange]:
    from . import rubyvcr

    doc = rubyvcr.load(path, read_source(path))

    def date_of(inter: dict[str, Any], resp: Any) -> Any:
        at = inter.get("recorded_at")
        return http_date_seconds(at) or iso_seconds(at) or http_date_seconds(header(resp.get("headers"), "date"))
    return _interactions(path, doc["http_interactions"], date_of, "/http_interactions")


def _har_headers(value: Any, path: Path, where: str) -> tuple[tuple[str, str], ...]:
    """HAR's ``[{"name", "value"}]`` as pairs, HTTP/2 pseudo-headers (``:path``...) left out."""
    if value is None:
        return ()
    if not isinstance(value, list):
        raise InputError("request.headers must be a list", path=path, pointer=where + "/request/headers")
    return tuple((h["name"], str(h.get("value", ""))) for h in value
                 if isinstance(h, dict) and isinstance(h.get("name"), str) and not h["name"].startswith(":"))


def _polly_chunks(text: str, encoding: Any) -> bytes | None:
    """Polly.js's node-http adapter keeps a ``Content-Encoding`` response as a
    JSON array of its chunks, base64 (``encoding: "base64"``, Polly 5 and later)
    or hex (no ``encoding``, before): ``getBodyFromChunks`` in
    https://github.com/Netflix/pollyjs, packages/@pollyjs/adapter-node-http/src/index.js.
    The chunks joined, or ``None`` when ``text`` is not such an array."""
    try:
        chunks = json.loads(text)
        if not isinstance(chunks, list) or not all(isinstance(c, str) for c in chunks):
            return None
        return b"".join(base64.b64decode(c, validate=True) if encoding == "base64" else bytes.fromhex(c)
                        for c in chunks)
    except (binascii.Error, ValueError, RecursionError):
        return None


def _har_content(content: dict[str, Any], headers: Any) -> bytes | None:
    """A HAR response's body, decoded; ``None`` where it cannot be read:
    ``text``, base64 when ``encoding`` says so, or Polly's chunks (:func:`_polly_chunks`)."""
    text = content.get("text")
    if not isinstance(text, str):
        return None
    encoding = content.get("encoding")
    if header(headers, "content-encoding") and text.startswith("["):
        raw = _polly_chunks(text, encoding)
        if raw is not None:
            return _decoded(raw, headers)
    if encoding == "base64":
        try:
            return _decoded(base64.b64decode(text), headers)
        except (binascii.Error, ValueError):
            return None
    return text.encode("utf-8", "surrogatepass")


def _har(path: Path) -> list[Exchange]:
    """HAR 1.2 (http://www.softwareishard.com/blog/har-12-spec/): ``log.entries[i].request``
    with ``postData.text`` (base64 when ``encoding`` says so) and ``bodySize``."""
    doc = loads(read_source(path), path=path)
    entries = doc.get("log", {}).get("entries") if isinstance(doc, dict) and isinstance(doc.get("log"), dict) else None
    if not isinstance(entries, list):
        raise InputError("not a HAR file (expected an object with log.entries)", path=path)
    out = []
    for i, e in enumerate(entries):
        where = f"/log/entries/{i}"
        req = e.get("request") if isinstance(e, dict) else None
        if not isinstance(req, dict):
            raise InputError("entry has no request object", path=path, pointer=where)
        url = req.get("url") if isinstance(req.get("url"), str) else None
        post: dict[str, Any] = req["postData"] if isinstance(req.get("postData"), dict) else {}
        body = _text(post.get("text"))
        pairs: tuple[tuple[str, str], ...] = ()
        decoded = None
        if body:
            if post.get("encoding") == "base64":
                try:
                    body = base64.b64decode(post["text"], validate=True)
                except (binascii.Error, ValueError):
                    raise InputError("postData.text is not valid base64", path=path,
                                     pointer=where + "/request/postData") from None
            pairs = _har_headers(req.get("headers"), path, where)
            body, decoded = _sent(body, pairs)
            if url is None:
                raise InputError("request has no url", path=path, pointer=where + "/request")
        resp: dict[str, Any] = e["response"] if isinstance(e.get("response"), dict) else {}
        content: dict[str, Any] = resp["content"] if isinstance(resp.get("content"), dict) else {}
        rbody = _har_content(content, resp.get("headers"))
        ctype = header(resp.get("headers"), "content-type") or content.get("mimeType")
        usage = from_response(None, ctype if isinstance(ctype, str) else None, rbody) if rbody else None
        size = req.get("bodySize")
        out.append(exchange(str(path), i, body or b"", url=url, time=iso_seconds(e.get("startedDateTime")),
                            usage=usage, status=http_status(resp.get("status")), session=str(path), where=where,
                            response_model=response_model(rbody), method=str(req.get("method") or "POST"),
                            pairs=pairs, decoded=decoded,
                            recorded_size=size if isinstance(size, int) and size >= 0 else None))
    return out


def _httprr(path: Path) -> list[Exchange]:
    from . import httprr

    out = []
    for i, (raw_req, raw_resp) in enumerate(httprr.records(read_source(path), path)):
        line, req_headers, body = httprr.message(raw_req, path)
        method, _, rest = line.partition(" ")
        url = rest.rsplit(" ", 1)[0] if " " in rest else rest
        host = header(req_headers, "host")
        if url.startswith("/") and host:
            url = f"https://{host}{url}"
        body, decoded = _sent(body, req_headers)
        status_line, resp_headers, rbody_raw = httprr.message(raw_resp, path) if raw_resp else ("", [], b"")
        rbody = _decoded(rbody_raw, resp_headers)
        code = status_line.split(" ")[1] if status_line.count(" ") >= 1 else None
        usage = from_response(None, header(resp_headers, "content-type"), rbody) if rbody else None
        out.append(exchange(str(path), i, body, url=url or None, time=http_date_seconds(header(resp_headers, "date")),
                            usage=usage, status=http_status(code), session=str(path), where=f"record {i + 1}",
                            response_model=response_model(rbody), method=method or "POST",
                            headers=dict(reversed(req_headers)),  # the first of a repeated header, as header() reads
                            pairs=tuple(req_headers), decoded=decoded))
    return out


def _jsonl(path: Path) -> list[Exchange]:
    """claude-trace logs (https://github.com/badlogic/lemmy/tree/main/apps/claude-trace):
    one JSON object per line, ``{"request": {"timestamp", "method", "url",
    "headers", "body"}, "response": {"headers", "body" | "body_raw",
    "status_code"}}``; a ``body`` logged as an object is kept as the bytes
    of that line (``reserialised``: the logger's bytes). Lines of another
    shape are request-log lines, read by :func:`fidelity.traffic.requestlog.parse`
    (a JSON object that holds no request: an entry with no body; any other
    bad line: an error naming it); ``where`` is ``line N``, counting every line. A line that is not JSON (duplicate
    keys, ``NaN`` and over-deep nesting included) is an error naming it."""
    from ..jsonbytes import value_spans

    out = []
    for i, raw_line in enumerate(read_source(path).split(b"\n")):
        line = raw_line.rstrip(b"\r")
        if not line.strip():
            continue
        rec = loads(line, path=f"{path}:{i + 1}")  # what is wrong with a line is named with its number
        req = rec.get("request") if isinstance(rec, dict) else None
        resp = rec.get("response") if isinstance(rec, dict) else None
        if not isinstance(req, dict) or not isinstance(req.get("body"), (dict, str)):
            out.append(_logged(path, i, line, rec))
            continue
        raw = req["body"]
        if isinstance(raw, str):
            body = raw.encode("utf-8", "surrogatepass")
        else:
            start, end = value_spans(line, ["/request/body"])["/request/body"]
            body = line[start:end]
        rbody: bytes | None = None
        resp = resp if isinstance(resp, dict) else {}
        assert isinstance(resp, dict)
        if isinstance(resp.get("body_raw"), str):
            rbody = resp["body_raw"].encode("utf-8", "surrogatepass")
        elif resp.get("body") is not None:
            rbody = json.dumps(resp["body"]).encode()
        usage = from_response(None, header(resp.get("headers"), "content-type"), rbody) if rbody else None
        headers = req.get("headers")
        out.append(exchange(str(path), i, body, url=req.get("url") if isinstance(req.get("url"), str) else None,
                            time=iso_seconds(req.get("timestamp")), usage=usage,
                            status=http_status(resp.get("status_code")), session=str(path), where=f"line {i + 1}",
                            reserialised=not isinstance(raw, str), response_model=response_model(rbody),
                            method=str(req.get("method") or "POST"),
                            pairs=_pairs(headers) if isinstance(headers, dict) else ()))
    return out


def _logged(path: Path, i: int, line: bytes, obj: Any) -> Exchange:
    """One request-log line (:mod:`.requestlog`) as an exchange."""
    from dataclasses import replace

    from .requestlog import BadLine, parse

    try:
        got = parse(line, obj)
    except BadLine as exc:
        if exc.reason != "no body":
            raise InputError(str(exc), path=path, line=i + 1) from None
        return exchange(str(path), i, b"", session=str(path), where=f"line {i + 1}")
    ex = exchange(str(path), i, got.body_bytes(), url=got.url or None, time=got.time, usage=got.usage(),
                  status=got.status, session=got.session or str(path), where=f"line {i + 1}", hint=got.hint,
                  reserialised=got.raw is None, method=got.method, headers=dict(got.headers), pairs=got.headers)
    return replace(ex, parent=got.parent) if got.parent else ex


def _snapshots(folder: Path) -> list[Exchange]:
    """A snapshot folder; usage from the metadata's ``usage`` or the
    proxy's ``response.usage``, status from ``response.status``."""
    from ..capture import snapshot

    out = []
    for i, p in enumerate(snapshot.iter_folder(folder)):
        body, snap = snapshot.load_body(p)
        meta: dict[str, Any] = snap.metadata() if snap is not None else {}
        if snap is not None:
            with open(p, "rb") as fh:  # members the documented metadata does not keep (the proxy's response)
                head = json.loads(fh.readline())
            meta = {**head, **meta}
        resp: dict[str, Any] = meta["response"] if isinstance(meta.get("response"), dict) else {}
        usage = normalise(meta.get("usage"), "json") or normalise(resp.get("usage"), "sse")
        out.append(exchange(str(p), i, body, url=snap.url if snap else None, time=iso_seconds(meta.get("time")),
                            usage=usage, status=http_status(resp.get("status")), session=str(folder),
                            hint=snap.provider if snap else None, model=snap.model if snap else None,
                            reserialised=snap is not None and not snap.body_exact))
    return out


_READERS: Registry[Callable[[Path], list[Exchange]]] = Registry("recording reader")
for _kind, _fn in (("vcr", _vcr), ("ruby-vcr", _ruby_vcr), ("har", _har), ("httprr", _httprr), ("jsonl", _jsonl),
                   ("snapshots", _snapshots)):
    _READERS.add(_kind, _fn)


def entries(source: Source) -> list[Exchange]:
    """Every entry of one recording, in recorded order, those that hold no
    request body included (with an empty ``body``: skipped, with the reason)."""
    return _READERS.get(source.kind)(source.path)


def read(source: Source) -> list[Exchange]:
    """The exchanges of one recording that hold a request body, in recorded order."""
    return [ex for ex in entries(source) if ex.body]


def read_all(path: str | Path) -> list[list[Exchange]]:
    """Every recording under ``path`` that holds a request (kinds in :data:`READ_KINDS`)."""
    out = [read(s) for s in list_sources(path) if s.kind in READ_KINDS]
    return [r for r in out if r]


def reported(path: str | Path) -> Iterator[Exchange]:
    """Every request under ``path`` whose response reported a prompt, set
    apart or not (what ``tokens-check`` and the Claude/Gemini fit read)."""
    for recording in read_all(path):
        yield from (ex for ex in recording if ex.usage is not None and isinstance(ex.usage.get("prompt"), int))
