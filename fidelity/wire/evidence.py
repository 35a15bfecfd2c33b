"""Which dialect a request speaks, the one decision every command, the proxy
and the scripted upstream take, weighing the evidence strongest first:
``--provider``, the URL (:func:`fidelity.providers.from_url`), snapshot or log
metadata, body marks (Anthropic-only marks never go to an OpenAI-family
dialect; over such a URL only :func:`request_marks` count), then the API path
(:func:`dialect_of_path`) where no known host decides. Details:
docs/real-traffic.md, "Detection that weighs evidence".

>>> d = detect_request({"model": "m", "messages": []}, url="https://api.deepseek.com/chat/completions")
>>> (d.dialect, d.family, d.why)
('deepseek', 'deepseek', 'URL: host api.deepseek.com')
"""

from __future__ import annotations

import re
from typing import Any, NamedTuple
from urllib.parse import unquote, urlsplit

import orjson

from .. import providers
from ..errors import FidelityError, InputError, UnknownName
from . import _DIALECTS, detect, get, undetected

__all__ = ["Detection", "detect_request", "route", "describe_bytes", "dialect_of_path", "endpoint_of",
           "anthropic_marks", "request_marks", "parse_body", "OPENAI_FAMILY"]

#: dialects with the Chat Completions / Responses body shape
OPENAI_FAMILY = frozenset(("openai-chat", "openai-responses", "deepseek", "dashscope", "vllm", "sglang"))
#: the OpenAI-compatible dialects that share the Chat Completions path (the body marks say which)
_CHAT_COMPATIBLE = frozenset(("deepseek", "dashscope", "vllm", "sglang"))
_MODEL_IN_URL = re.compile(r"/models/([^/:]+)")


class Detection(NamedTuple):
    """The dialect and provider family chosen for one request, and why;
    ``supported`` is false for an API with no wire dialect (Bedrock Converse)."""

    dialect: str
    family: str | None
    model: str | None
    why: str
    conflict: str | None = None
    supported: bool = True


_URL_CACHE: dict[str, Any] = {}


def endpoint_of(url: str) -> Any:
    """:func:`fidelity.providers.from_url`, memoised (a log names few URLs)."""
    hit = _URL_CACHE.get(url)
    if hit is None and url not in _URL_CACHE:
        hit = _URL_CACHE[url] = providers.from_url(url)
        if len(_URL_CACHE) > 4096:
            _URL_CACHE.clear()
    return hit


def dialect_of_path(path: str) -> str | None:
    """The API a request path belongs to (``None``: none fidelity knows;
    ``anthropic-count``: the Messages API's token counter)."""
    p = path.rstrip("/")
    if p.endswith("/chat/completions"):
        return "openai-chat"
    if p.endswith("/responses"):
        return "openai-responses"
    if p.endswith("/messages/count_tokens"):
        return "anthropic-count"
    if p.endswith("/messages"):
        return "anthropic-messages"
    if ":generateContent" in p or ":streamGenerateContent" in p:
        return "gemini"
    return None


def request_marks(obj: Any) -> list[str]:
    """The Anthropic-only marks of the request's top-level keys
    (``anthropic_version``, a top-level ``system``, ``max_tokens`` first): the
    only marks that outweigh a provider's URL (they read no tools or messages)."""
    if not isinstance(obj, dict) or not isinstance(obj.get("messages"), list):
        return []
    marks = []
    if "anthropic_version" in obj:
        marks.append("anthropic_version")
    if "system" in obj:
        marks.append("top-level system")
    if next(iter(obj), None) == "max_tokens":
        marks.append("max_tokens first")
    return marks


def anthropic_marks(obj: Any) -> list[str]:
    """The Anthropic-only marks of a body (empty: none): :func:`request_marks`,
    ``input_schema`` tools, typed content blocks."""
    marks = request_marks(obj)
    if not isinstance(obj, dict) or not isinstance(obj.get("messages"), list):
        return marks
    tools = obj.get("tools")
    if isinstance(tools, list) and any(isinstance(t, dict) and "input_schema" in t for t in tools):
        marks.append("input_schema tools")
    if _typed_blocks(obj["messages"]):
        marks.append("typed content blocks")
    return marks


_TYPED = frozenset(("tool_use", "tool_result", "thinking", "redacted_thinking", "document", "image",
                    "server_tool_use"))


def _typed_blocks(messages: list[Any]) -> bool:
    """Does a message hold an Anthropic-typed content block?"""
    for m in messages:
        content = m.get("content") if type(m) is dict else None
        if type(content) is list:
            for b in content:
                if type(b) is dict:
                    t = b.get("type")
                    if type(t) is str and t in _TYPED:
                        return True
    return False


def _body_dialect(obj: Any) -> str | None:
    if anthropic_marks(obj):
        return "anthropic-messages"
    try:
        return detect(obj).name
    except FidelityError:
        return None


#: body shapes: dialects whose requests share their top-level structure
_SHAPES = ({"openai-chat", "deepseek", "dashscope", "vllm", "sglang", "anthropic-messages"},  # model + messages
           {"openai-responses"},  # input
           {"gemini"})  # contents


def _fits(dialect: str, body: str | None) -> bool:
    """Can a body that looks like ``body`` be a request of ``dialect`` (the same top-level shape)?"""
    if body is None or body == dialect:
        return True
    return any(dialect in shape and body in shape for shape in _SHAPES)


def _accepts(dialect: str, obj: Any) -> bool:
    """Does the dialect's own ``detect`` recognise the body?"""
    try:
        return bool(get(dialect).detect(obj))
    except Exception:  # noqa: BLE001 - a detect that cannot read the body does not accept it
        return False


def _family(dialect: str) -> str | None:
    try:
        return providers.for_dialect(dialect).name
    except UnknownName:
        return None


def _model(obj: Any, url: str | None, endpoint: Any, meta_model: str | None) -> str | None:
    """The body's ``model``, else the URL's (``/models/<model>``, a route's
    model pattern), else the metadata's."""
    named = obj.get("model") if isinstance(obj, dict) else None
    if isinstance(named, str):
        return named
    if url:
        try:
            m = _MODEL_IN_URL.search(unquote(urlsplit(url).path))
        except ValueError:
            m = None
        if m:
            return m.group(1)
        if endpoint is not None and endpoint.model:
            return str(endpoint.model)
    return meta_model


def _by_url_and_body(obj: Any, endpoint: Any, meta_dialect: str | None, model: str | None) -> Detection | None:
    """URL, metadata and body marks (``None``: nothing tells)."""
    if endpoint is not None:
        why = f"URL: {endpoint.rule}"
        if endpoint.dialect not in _DIALECTS:
            return Detection(endpoint.dialect, endpoint.provider, model, why, supported=False)
        marks = request_marks(obj) if endpoint.dialect in OPENAI_FAMILY else []
        if marks:
            fam = endpoint.provider
            try:
                owns = any(r.dialect == "anthropic-messages" for r in providers.get(fam).routes)
            except UnknownName:
                owns = False
            return Detection("anthropic-messages", fam if owns else "anthropic", model,
                             f"body marks: {', '.join(marks)}",
                             f"the URL ({endpoint.rule}) says {endpoint.dialect}, but the body has Anthropic-only "
                             f"marks ({', '.join(marks)}): read as anthropic-messages")
        if _accepts(endpoint.dialect, obj):
            return Detection(endpoint.dialect, endpoint.provider, model, why)
        body = _body_dialect(obj)
        if _fits(endpoint.dialect, body):
            return Detection(endpoint.dialect, endpoint.provider, model, why)
        return Detection(body, _family(body), model, f"body marks ({body})",  # type: ignore[arg-type]
                         f"the URL ({endpoint.rule}) says {endpoint.dialect}, but the body is not a request "
                         f"of that shape: read as {body}")
    body = _body_dialect(obj)
    if meta_dialect and meta_dialect in _DIALECTS:
        if _fits(meta_dialect, body) and not (meta_dialect in OPENAI_FAMILY and body == "anthropic-messages"):
            return Detection(meta_dialect, _family(meta_dialect), model, f"snapshot metadata: {meta_dialect}")
        conflict = f"the snapshot metadata says {meta_dialect}, but the body looks like {body}: read as {body}"
        return Detection(body, _family(body), model, f"body marks ({body})", conflict)  # type: ignore[arg-type]
    if body is None:
        return None
    return Detection(body, _family(body), model, f"body marks ({body})")


def _by_path(found: Detection | None, url: str, endpoint: Any, model: str | None) -> Detection | None:
    """The API path, where no known provider's host decided."""
    if providers.places_host(endpoint):
        return found
    try:
        path = urlsplit(url).path
    except ValueError:
        return found
    by_path = dialect_of_path(path)
    if by_path in (None, "anthropic-count") or (found is not None and (
            found.dialect == by_path or (by_path == "openai-chat" and found.dialect in _CHAT_COMPATIBLE))):
        return found
    assert by_path is not None
    conflict = None if found is None else (f"the body looks like {found.dialect}, but the path is "
                                           f"{by_path}'s: read as {by_path}")
    return Detection(by_path, _family(by_path), model, f"URL path ({by_path})", conflict)


def detect_request(
    obj: Any,
    *,
    url: str | None = None,
    meta_dialect: str | None = None,
    meta_model: str | None = None,
    override: str | None = None,
    path: str | None = None,
) -> Detection:
    """Weigh ``--provider`` (``override``), URL, metadata and body (see the
    module docstring). ``obj`` is the parsed body (``None``: not JSON).
    :class:`InputError` (naming ``path``) when nothing identifies it."""
    endpoint = endpoint_of(url) if url else None
    model = _model(obj, url, endpoint, meta_model)
    if override:
        try:
            d = get(override).name
        except UnknownName as exc:
            raise InputError(str(exc), path=path) from None
        body = _body_dialect(obj)
        others = [f"URL says {endpoint.dialect}" for _ in [0] if endpoint and endpoint.dialect != d]
        others += [f"body looks like {body}" for _ in [0] if body and not _fits(d, body) and body != d]
        family = endpoint.provider if endpoint and endpoint.dialect == d else _family(d)
        return Detection(d, family, model, f"--provider {override}",
                         ("; ".join(others) + f"; --provider {override} wins") if others else None)
    found = _by_url_and_body(obj, endpoint, meta_dialect, model)
    if url:
        found = _by_path(found, url, endpoint, model)
    if found is None:
        raise undetected(path)
    return found


def route(obj: Any, url: str | None, hint: str | None = None,
          model: str | None = None) -> tuple[str | None, str | None, str | None]:
    """:func:`detect_request` as ``(dialect, provider, model)``: ``hint`` is
    the dialect the recording names, ``model`` the model it names where
    neither body nor URL does; ``None`` where nothing tells."""
    try:
        d = detect_request(obj, url=url or None, meta_dialect=hint, meta_model=model)
    except InputError:
        return None, None, _model(obj, url, None, model)
    return d.dialect, d.family, d.model


def parse_body(dialect: Any, body: bytes, model: str | None = None) -> Any:
    """``dialect.parse(body)``, handing ``model`` to the dialects whose bodies
    may leave it to the URL (Gemini, Anthropic on Bedrock / Vertex AI)."""
    import inspect

    try:
        takes_model = "model" in inspect.signature(dialect.parse).parameters
    except (TypeError, ValueError):
        takes_model = False
    if takes_model:
        return dialect.parse(body, model=model or "")
    return dialect.parse(body)


def describe_bytes(url: str | None, body: bytes) -> tuple[str | None, str | None, str | None, str | None]:
    """``(dialect, family, model, conflict)`` of a request from its URL and
    body (:func:`detect_request`); ``None`` where nothing tells."""
    obj: Any = None
    if body.lstrip()[:1] == b"{":
        try:
            obj = orjson.loads(body)
        except orjson.JSONDecodeError:
            obj = None
    try:
        found = detect_request(obj, url=url)
    except InputError:  # nothing identifies it
        return None, None, _model(obj, url, None, None), None
    return found.dialect, found.family, found.model, found.conflict
