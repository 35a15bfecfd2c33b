"""One line of a JSON-lines request log, read one way for every command.

A line is a request body itself (a JSON object with ``messages``,
``contents``, ``input`` or ``prompt``) or an envelope holding it: ``body``
(a JSON object: the logger's bytes; a string: the bytes as sent) or
``body_base64``, with ``url``, ``method``, ``headers``, ``parent``,
``time`` / ``timestamp`` / ``logged_at``, ``session``, ``provider``,
``usage``, ``status`` and ``response`` (OpenAI Batch input is such an
envelope: https://platform.openai.com/docs/guides/batch); the envelope may
sit under ``request``. The rules: docs/scan.md, "Log format".

:func:`parse` states the facts of a line or raises :class:`BadLine`; the
scan (:mod:`fidelity.scan.records`), the one reader
(:mod:`fidelity.traffic.sources`) and through it ``fidelity import`` read
request logs through it and decide nothing here."""

from __future__ import annotations

import base64
import json
from dataclasses import dataclass
from typing import Any

import orjson

from .exchange import http_date_seconds, iso_seconds
from .usage import from_response, http_status, normalise, usage_of

__all__ = ["BadLine", "LogLine", "parse"]

#: members a bare request body holds (one of them makes a line without ``body`` a body)
_REQUEST_KEYS = ("messages", "contents", "input", "prompt")


class BadLine(Exception):
    """A line that holds no readable request; ``reason`` is a short category
    (the scan counts by it) and ``detail`` the specific problem."""

    def __init__(self, reason: str, detail: str = "") -> None:
        super().__init__(f"{reason}: {detail}" if detail else reason)
        self.reason = reason
        self.detail = detail


@dataclass
class LogLine:
    """What one request-log line says about its request."""

    line: bytes
    obj: dict[str, Any]
    #: the members that describe the request (the line, or its ``request`` object)
    env: dict[str, Any]
    body: dict[str, Any]
    #: the body's bytes as sent (a text or base64 body, or the bare line); ``None``: logged as an object
    raw: bytes | None
    url: str
    time: float | None
    session: str | None
    status: int | None
    #: the ``provider`` the line names (a dialect hint), if any
    hint: str | None
    method: str
    headers: tuple[tuple[str, str], ...]
    #: ``(value,)`` when the line names a ``parent`` (``None`` included), else ``()``
    parent: tuple[Any, ...]

    def body_bytes(self) -> bytes:
        """The body's bytes: as sent, or for a body logged as an object the
        bytes the logger wrote for it (the span of the line that holds it)."""
        if self.raw is not None:
            return self.raw
        from ..jsonbytes import value_spans

        pointer = "/request/body" if self.env is not self.obj else "/body"
        start, end = value_spans(self.line.strip(), [pointer])[pointer]
        return self.line.strip()[start:end]

    def usage(self) -> dict[str, Any] | None:
        """The usage the line logged (``usage``) or its ``response`` reported."""
        used = normalise(self.obj.get("usage"))
        if used is not None or "response" not in self.obj:
            return used
        resp = self.obj["response"]
        rbody = resp
        if isinstance(resp, dict):  # claude-trace keeps a stream as body_raw
            rbody = resp["body"] if resp.get("body") is not None else resp.get("body_raw", resp)
        if isinstance(rbody, dict):
            found = usage_of(rbody)
            return {**found, "source": "log"} if found else None
        if isinstance(rbody, str):
            return from_response(None, None, rbody.encode("utf-8", "surrogatepass"))
        return None


def _time(value: Any) -> float | None:
    if value is None:
        return None
    t = iso_seconds(value)
    if t is None:
        t = http_date_seconds(value)
    if t is not None:
        return t
    if isinstance(value, str):
        raise BadLine("bad time", f"not ISO 8601, an HTTP date or epoch seconds: {value[:40]!r}")
    raise BadLine("bad time", f"time must be a string or a number, not {type(value).__name__}")


def _body(env: dict[str, Any]) -> tuple[dict[str, Any], bytes | None]:
    if "body_base64" in env:
        try:
            raw = base64.b64decode(env["body_base64"], validate=True)
        except (ValueError, TypeError):
            raise BadLine("bad body", "body_base64 is not base64") from None
    elif isinstance(env.get("body"), dict):
        return env["body"], None
    elif isinstance(env.get("body"), str):
        raw = env["body"].encode("utf-8", "surrogatepass")
    elif "body" in env:
        raise BadLine("bad body", "body must be a JSON object, a string or body_base64")
    else:
        raise BadLine("no body", "the line has no body")
    try:
        obj = orjson.loads(raw)
    except orjson.JSONDecodeError:
        try:  # the standard library's reads lone surrogates too
            obj = json.loads(raw.decode("utf-8", "surrogatepass"))
        except (ValueError, RecursionError):
            raise BadLine("bad body", "the body is not JSON") from None
    if not isinstance(obj, dict):
        raise BadLine("bad body", "the body is not a JSON object")
    return obj, raw


def _headers(value: Any) -> tuple[tuple[str, str], ...]:
    if value is None:
        return ()
    if isinstance(value, dict):
        return tuple((str(k), str(v)) for k, v in value.items())
    if isinstance(value, list) and all(isinstance(p, list) and len(p) == 2 for p in value):
        return tuple((str(k), str(v)) for k, v in value)
    raise BadLine("bad headers", "headers must be an object or a list of [name, value] pairs")


def parse(line: bytes, obj: Any = None) -> LogLine:
    """One log line (``obj``: the line already parsed, if it was);
    :class:`BadLine` says why it holds no readable request."""
    if obj is None:
        try:
            obj = orjson.loads(line)
        except orjson.JSONDecodeError as exc:
            raise BadLine("truncated or invalid JSON", str(exc).split(":")[0][:80]) from None
    if not isinstance(obj, dict):
        raise BadLine("not a JSON object")
    env = obj
    if isinstance(obj.get("request"), dict):
        env = obj["request"]
    if "body" in env or "body_base64" in env:
        body, raw = _body(env)
    elif any(k in obj for k in _REQUEST_KEYS):
        body, raw = obj, line.strip()
        env = {}
    else:
        raise BadLine("no body", "the line has no body and is not a request body")
    t = _time(obj.get("time", obj.get("timestamp", obj.get("logged_at", env.get("time")))))
    url = env.get("url") or env.get("uri") or obj.get("url")
    hint = obj.get("provider")
    session = obj.get("session")
    status = obj.get("status")
    if status is None and isinstance(obj.get("response"), dict):  # claude-trace's envelope
        status = obj["response"].get("status_code", obj["response"].get("status"))
    return LogLine(line, obj, env if env else obj, body, raw, url if isinstance(url, str) else "", t,
                   str(session) if session is not None else None, http_status(status),
                   hint if isinstance(hint, str) else None, str(env.get("method") or "POST"),
                   _headers(env.get("headers")), (obj["parent"],) if "parent" in obj else ())
