"""JSON-lines request logs: one request per non-blank line, the body itself or
an envelope (``body``, ``url``, ``method``, ``headers``, ``parent``, as OpenAI
Batch input is: https://platform.openai.com/docs/guides/batch); claude-trace
lines go through :mod:`.recorded`. The rules: docs/ci-and-capture.md."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from ... import jsonbytes as _json
from ...errors import InputError
from ...traffic.files import read_source
from ...traffic.sources import Source, entries
from ..classify import classify
from ._base import Imported, iso_time, looks_like_model_request
from .recorded import add as add_recorded

__all__ = ["read_jsonl"]


def read_jsonl(path: str | Path) -> Imported:
    """Every request line of a JSONL log, in line order."""
    data = read_source(path)
    if not data.strip():
        raise InputError("empty file, expected JSON lines", path=path)
    out = Imported(source=f"jsonl:{Path(path).name}")
    traced = {ex.index: ex for ex in entries(Source("jsonl", Path(path)))}
    names_by_line: dict[int, str] = {}
    set_apart: set[int] = set()
    for number, raw in enumerate(data.split(b"\n"), start=1):
        if number - 1 in traced:
            name = add_recorded(out, traced[number - 1], "jsonl")
            if name is not None:
                names_by_line[number] = name
            continue
        line = raw.rstrip(b"\r")
        if not line.strip():
            continue
        obj = _json.loads(line, path=f"{path}:{number}")
        if not isinstance(obj, dict):
            raise InputError("expected a JSON object", path=path, line=number)
        where = f"line {number}"
        envelope: dict[str, Any] = obj
        notes: list[str]
        if "body" not in envelope:
            if not looks_like_model_request(line):
                out.skip(classify("POST", None, {}, line).reason)
                continue
            body, exact, notes = line.strip(), True, []
        else:
            value = envelope["body"]
            if isinstance(value, str):
                body, exact, notes = value.encode("utf-8", "surrogatepass"), True, []
            elif isinstance(value, dict):
                start, end = _json.value_spans(line, ["/body"])["/body"]
                body, exact = line[start:end], False
                notes = ["the body was logged as a JSON object: these are the logger's bytes, not necessarily the client's"]
            else:
                raise InputError("body must be a JSON object or a string", path=path, line=number)
            headers_probe = envelope.get("headers")
            headers_probe = headers_probe if isinstance(headers_probe, dict) else {}
            url_probe = envelope.get("url") if isinstance(envelope.get("url"), str) else None
            kind = classify(str(envelope.get("method") or "POST"), url_probe, headers_probe, body)
            if not kind.generation:
                out.skip(kind.reason)
                continue
        kwargs: dict[str, Any] = {}
        if "parent" in envelope:
            parent = envelope["parent"]
            if parent is not None and parent not in names_by_line and parent not in set_apart:
                raise InputError(f"parent {parent!r} is not an earlier request line", path=path, line=number)
            if parent in set_apart:
                notes = [*notes, f"its parent, line {parent}, was set apart: the snapshot names no parent"]
            kwargs = {"has_parent": True, "parent": names_by_line.get(parent) if parent is not None else None}
        response = obj.get("response")
        recorded = None
        if isinstance(response, dict):
            r_body = response.get("body_raw", response.get("body"))
            if isinstance(r_body, (dict, list)):
                r_body = _json.dumps_compact(r_body)
            r_headers = response.get("headers")
            recorded = (r_headers if isinstance(r_headers, dict) else {}, r_body)
        snap = out.add(
            method=str(envelope.get("method") or "POST"),
            url=str(envelope.get("url") or ""),
            headers=_headers(envelope.get("headers"), path, number),
            body=body,
            where=where,
            notes=notes,
            body_exact=exact,
            time=iso_time(obj.get("timestamp", obj.get("logged_at", obj.get("time")))),
            response=recorded,
            **kwargs,
        )
        if snap is None:  # set apart (a malformed URL): the warnings say why
            set_apart.add(number)
            continue
        names_by_line[number] = snap.filename
    if any(not s.body_exact for s in out.snapshots):
        out.warnings.append("some bodies were logged as JSON objects; their bytes are the logger's serialisation")
    return out


def _headers(value: Any, path: str | Path, line: int) -> list[tuple[str, str]]:
    if value is None:
        return []
    if isinstance(value, dict):
        return [(str(k), str(v)) for k, v in value.items()]
    if isinstance(value, list) and all(isinstance(p, list) and len(p) == 2 for p in value):
        return [(str(k), str(v)) for k, v in value]
    raise InputError("headers must be an object or a list of [name, value] pairs", path=path, line=line)
