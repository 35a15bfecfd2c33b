"""The one rule for which recorded requests a command scores, and why the
others are set apart.

Every reader builds its :class:`~fidelity.traffic.exchange.Exchange` with
:func:`exchange`, which routes the request (dialect, provider, model: the one
decision of :func:`fidelity.wire.evidence.detect_request`) and calls
:func:`decide`; ``replay``, ``tokens-check``, ``scan`` and the survey
then take the decision as it is. Two kinds of decision:

* **skip** -- the simulator does not take the request: not a generation
  call (embeddings, uploads, legacy ``/v1/completions``...:
  :func:`fidelity.capture.classify.classify`), a failed request (HTTP 400 or
  more: it read and wrote nothing), a body that is not the one sent (its
  recorded ``Content-Length`` disagrees), a body that is not JSON, a provider no
  rule names, an API fidelity has no dialect for (Bedrock Converse);
* **apart** -- simulated (what it writes is there for later requests) but
  in no accuracy figure, because its billed prompt holds what the body does
  not show (:func:`fidelity.server_side.reason`: server tools such as
  Anthropic ``web_fetch`` or Gemini ``urlContext`` / ``googleSearch``, a
  server template, server state).

>>> exchange("x", 0, b'{"model":"gpt-4o","prompt":"hi"}', url="https://api.openai.com/v1/completions").skip
'not a generation request: legacy completions (prompt) request'
>>> exchange("x", 0, b'{"model":"gpt-4o","messages":[]}', url="https://api.openai.com/v1/chat/completions",
...          status=429).skip
'failed request (HTTP 429)'
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from typing import Any

from .. import server_side, wire
from ..capture.classify import classify
from ..capture.redact import url_problem
from ..wire.evidence import endpoint_of, route
from .exchange import Exchange, header

__all__ = ["exchange", "decide", "response_time", "route", "endpoint_of", "NOT_AS_SENT"]

#: a recorded body whose length is not the ``Content-Length`` it was sent with:
#: edited after recording (a stand-in for a long prompt, another model's name)
NOT_AS_SENT = "the recording does not hold the body as sent (Content-Length differs)"


def decide(obj: Any, body: bytes, url: str | None, dialect: str | None, status: int | None = None,
           method: str = "POST", headers: Mapping[str, Any] | None = None,
           reserialised: bool = False, when: float | None = None) -> tuple[str | None, str | None]:
    """``(skip, apart)``: why the request is not simulated, or why it is
    simulated but left out of the figures (see the module docstring).
    ``headers``: the recorded request headers; ``reserialised``: the body is
    the recorder's serialisation of parsed JSON (its length says nothing);
    ``when``: when it was sent (epoch seconds)."""
    problem = url_problem(url) if url else None
    if problem is not None:  # as the importers set it apart: nothing can route, redact or write it
        return f"malformed URL: {problem}", None
    kind = classify(method, url, headers or {}, body, obj)
    if not kind.generation:
        return f"not a generation request: {kind.reason}", None
    if headers and not reserialised and not header(headers, "content-encoding"):
        sent = header(headers, "content-length")
        if sent is not None and sent.strip().isdigit() and int(sent) != len(body):
            return NOT_AS_SENT, None
    if status is not None and status >= 400:
        return f"failed request (HTTP {status})", None
    if dialect is None:
        return "unknown provider (no URL route, no dialect recognises the body)", None
    if dialect not in wire.names():
        return f"an API fidelity has no wire dialect for ({dialect})", None
    ep = endpoint_of(url) if url else None
    return None, server_side.reason(obj, raw=body, server_prompt=ep.server_prompt if ep is not None else "",
                                    dialect=dialect, provider=ep.provider if ep is not None else None, when=when)


def response_time(response: bytes | None) -> float | None:
    """The epoch seconds a response body says it was created at (``created_at``,
    ``created``), if any."""
    m = _CREATED.search(response[:65536]) if response else None
    return float(m.group(1)) if m else None


_CREATED = re.compile(rb'"created(?:_at)?"\s*:\s*(\d{9,11})\b')


def exchange(source: str, index: int, body: bytes, *, url: str | None = None, time: float | None = None,
             usage: Mapping[str, Any] | None = None, status: int | None = None, session: str | None = None,
             where: str = "", hint: str | None = None, model: str | None = None, reserialised: bool = False,
             response_model: str | None = None, method: str = "POST",
             headers: Mapping[str, Any] | None = None, pairs: tuple[tuple[str, str], ...] = (),
             decoded: str | None = None, recorded_size: int | None = None,
             response: bytes | None = None) -> Exchange:
    """An :class:`Exchange` routed and decided by the one rule. ``hint``:
    the dialect the recording names; ``model``: the model it names where
    the body does not; ``headers``: the request headers the rule reads;
    ``response``: the response body, read for when it was sent where ``time`` is not known;
    ``pairs``, ``decoded``, ``recorded_size``: kept on the exchange as
    recorded (:class:`Exchange`), read by no rule."""
    try:
        obj = json.loads(body)  # the standard library's: it reads lone surrogates too
    except (ValueError, RecursionError):
        obj = None
    dialect, provider, named = route(obj, url, hint, model)
    skip, apart = decide(obj, body, url, dialect, status, method, headers, reserialised,
                         time if time is not None else response_time(response))
    return Exchange(source, index, body, url, dialect, named, time, usage, skip=skip, apart=apart,
                    status=status, session=session, where=where, reserialised=reserialised,
                    response_model=response_model, provider=provider, method=method, headers=pairs,
                    decoded=decoded, recorded_size=recorded_size)
