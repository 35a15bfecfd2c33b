"""vcrpy cassettes (the YAML default serializer, or the JSON one).

A cassette is ``{"version": 1, "interactions": [{"request": {"method",
"uri", "headers": {name: [values]}, "body"}, "response": {...}}]}``
(vcrpy ``vcr/cassette.py`` and ``vcr/serializers/``). Where a cassette cannot
hold the exact body bytes (vcrpy's ``filter_post_data_parameters``
re-serialising, ``parsed_body``, a disagreeing ``Content-Length``) the
warnings, ``notes`` and ``body_exact`` say so: docs/ci-and-capture.md,
"Importing recorded traffic". YAML goes through :func:`._yaml.load_yaml`."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from ...errors import InputError
from ...jsonio import loads
from ..classify import classify
from ._base import Imported, iso_time, read_source, request_body
from ._yaml import load_yaml

__all__ = ["read_cassette", "reserialised_by_vcrpy", "load_cassette"]

_SDK_HINTS = ("openai/python", "anthropic/python", "x-stainless-lang")


def load_cassette(path: str | Path) -> Any:
    """The document of a cassette file (JSON, or YAML through the one guarded
    loader :func:`~fidelity.capture.importers._yaml.load_yaml`), gunzipped
    first when it is a ``.gz`` file. Every reader of cassettes calls this."""
    data = read_source(path)
    if data.lstrip()[:1] == b"{":
        return loads(data, path=path)
    return load_yaml(data, path)



def reserialised_by_vcrpy(body: bytes) -> bool:
    """True when ``body`` is JSON written with ``json.dumps`` defaults and
    differs from its compact form, i.e. it has vcrpy's re-dump spacing."""
    try:
        obj = json.loads(body.decode("utf-8"))
    except (UnicodeDecodeError, ValueError):
        return False
    spaced = json.dumps(obj).encode("utf-8")
    compact = json.dumps(obj, separators=(",", ":")).encode("utf-8")
    return body == spaced and spaced != compact


def read_cassette(path: str | Path) -> Imported:
    """Every model request of a vcrpy cassette, in interaction order."""
    doc = load_cassette(path)
    if not isinstance(doc, dict) or not isinstance(doc.get("interactions"), list):
        raise InputError("not a vcrpy cassette (expected a mapping with an interactions list)", path=path)
    out = Imported(source=f"cassette:{Path(path).name}")
    out.warnings.append(
        "a vcrpy cassette stores each body after vcrpy's filters and any before_record_request hook; "
        "a hook that rewrote a body cannot be detected"
    )
    for i, inter in enumerate(doc["interactions"]):
        where = f"/interactions/{i}/request"
        req = inter.get("request") if isinstance(inter, dict) else None
        if not isinstance(req, dict):
            raise InputError("interaction has no request mapping", path=path, pointer=where)
        uri = req.get("uri")
        if not isinstance(uri, str):
            raise InputError("request has no uri", path=path, pointer=where)
        headers = _headers(req.get("headers"), path, where)
        low = {k.lower(): v for k, v in headers}
        notes: list[str] = []
        parsed = "parsed_body" in req and req.get("body") in (None, "", b"")
        raw = req.get("body")
        if parsed:
            # pydantic-ai's recorder stores the parsed JSON (its keys sorted), not the bytes
            value = req["parsed_body"]
            if not isinstance(value, (dict, list)):
                out.skip("parsed_body that is not a JSON object")
                continue
            body = json.dumps(value, ensure_ascii=False, separators=(",", ":")).encode("utf-8", "surrogatepass")
            notes.append("the cassette stores parsed_body (the recorder's parsed JSON, keys re-ordered), "
                         "not the bytes sent: the body is its compact serialisation")
        else:
            if isinstance(raw, dict) and "string" in raw:  # the response-style shape
                raw = raw["string"]
            if raw is None or raw == "" or raw == b"":
                out.skip(classify(str(req.get("method") or "GET"), uri, low, b"").reason)
                continue
            if isinstance(raw, bytes):
                body = raw
            elif isinstance(raw, str):
                body = raw.encode("utf-8", "surrogatepass")
            else:
                raise InputError(f"request body must be text or bytes, not {type(raw).__name__}", path=path,
                                 pointer=where + "/body")
        encoding = low.get("content-encoding")
        ready, why = request_body(body, encoding, str(req.get("method") or "POST"), uri, low, notes)
        if ready is None:
            out.skip(why or "not a model request")
            continue
        body = ready
        length = low.get("content-length")
        if not parsed and not encoding and length is not None and length.strip().isdigit() and int(length) != len(body):
            notes.append(
                f"Content-Length says {int(length)} bytes but the cassette body is {len(body)}: "
                "the cassette does not hold the exact body bytes"
            )
        hints = " ".join(f"{k}:{v}" for k, v in low.items()).lower()
        # a recorded Content-Length equal to the spaced body's length proves
        # the client sent it spaced (openai 1.x over httpx < 0.28 does)
        length_ok = length is not None and length.strip().isdigit() and int(length) == len(body)
        if not parsed and not length_ok and reserialised_by_vcrpy(body):
            if any(h in hints for h in _SDK_HINTS):
                notes.append(
                    "the body is spaced as json.dumps writes it, but the SDK that sent it writes compact "
                    "JSON: vcrpy re-serialised it (filter_post_data_parameters); the cassette does not "
                    "hold the exact body bytes"
                )
            else:
                out.warnings.append(
                    f"{where}: the body is spaced as json.dumps writes it; if the client sent compact JSON, "
                    "vcrpy re-serialised it (filter_post_data_parameters) and the bytes are not exact"
                )
        response = inter.get("response")
        response = response if isinstance(response, dict) else {}
        r_headers = response.get("headers")
        r_headers = r_headers if isinstance(r_headers, dict) else {}
        r_body = response.get("body")
        if isinstance(r_body, dict):
            r_body = r_body.get("string")
        if not r_body and isinstance(response.get("parsed_body"), (dict, list)):
            r_body = json.dumps(response["parsed_body"]).encode("utf-8", "surrogatepass")
            r_headers = {k: v for k, v in r_headers.items() if str(k).lower() != "content-encoding"}
        exact = not any(("not the bytes sent" in n or "not hold the exact" in n) for n in notes)
        snap = out.add(
            method=str(req.get("method") or "POST"),
            url=uri,
            headers=headers,
            body=body,
            where=where,
            notes=notes,
            body_exact=exact,
            time=iso_time(_first(r_headers, "date")),
            response=(r_headers, r_body),
        )
        if snap is None:  # set apart (a malformed URL): the warnings say why
            continue
        out.warnings.extend(f"{where}: {n}" for n in notes if "Content-Encoding" not in n)
    return out


def _first(headers: Any, name: str) -> Any:
    for k, v in (headers or {}).items():
        if str(k).lower() == name:
            return v[0] if isinstance(v, list) and v else v
    return None


def _headers(value: Any, path: str | Path, where: str) -> list[tuple[str, str]]:
    if value is None:
        return []
    if not isinstance(value, dict):
        raise InputError("request headers must be a mapping", path=path, pointer=where + "/headers")
    out = []
    for name, vals in value.items():
        for v in vals if isinstance(vals, list) else [vals]:
            out.append((str(name), v.decode("latin-1") if isinstance(v, bytes) else str(v)))
    return out

