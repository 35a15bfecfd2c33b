"""Which dialect a request speaks, weighing the evidence strongest first.

1. ``--provider`` (the user said so).
2. The URL: host and path (:func:`fidelity.providers.from_url`); it also
   names the provider family (DeepSeek, DashScope and OpenRouter bodies look
   like OpenAI's) and, for Gemini, Azure deployments, Bedrock and Vertex AI,
   the model.
3. Snapshot metadata (the dialect an importer recorded), when there is no URL.
4. Body marks (each dialect's ``detect``). A body with Anthropic-only marks
   (a top-level ``system``, ``max_tokens`` first as the anthropic SDK writes
   it, ``input_schema`` tools, typed content blocks, ``anthropic_version``)
   is never given to an OpenAI-family dialect.

When two kinds of evidence disagree, :class:`Detection` says which dialect
was chosen and why (``conflict``). The URL wins unless the body cannot be a
request of the URL's dialect at all (a Gemini ``contents`` body posted to a
chat URL), or carries Anthropic-only marks while the URL names an
OpenAI-family dialect.

>>> d = detect_request({"model": "m", "messages": []}, url="https://api.deepseek.com/chat/completions")
>>> (d.dialect, d.family, d.why)
('deepseek', 'deepseek', 'URL: host api.deepseek.com')
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any
from urllib.parse import unquote, urlsplit

import orjson

from .. import providers
from ..errors import InputError, UnknownName

__all__ = ["Detection", "detect_request", "describe_bytes", "anthropic_marks", "OPENAI_FAMILY"]

#: dialects with the Chat Completions / Responses body shape
OPENAI_FAMILY = frozenset(("openai-chat", "openai-responses", "deepseek", "dashscope", "vllm", "sglang"))
_CHAT_SHAPE = frozenset(("openai-chat", "deepseek", "dashscope", "vllm", "sglang"))


@dataclass(frozen=True)
class Detection:
    """The dialect and provider family chosen for one request, and why.

    ``supported`` is false when the evidence names an API that fidelity has
    no wire dialect for (Bedrock Converse); ``model`` comes from the body,
    else the snapshot metadata, else the URL."""

    dialect: str
    family: str
    model: str | None
    why: str
    conflict: str | None = None
    supported: bool = True


def anthropic_marks(obj: Any) -> list[str]:
    """The Anthropic-only marks of a body (empty: none)."""
    if not isinstance(obj, dict) or not isinstance(obj.get("messages"), list):
        return []
    marks = []
    if "anthropic_version" in obj:
        marks.append("anthropic_version")
    if "system" in obj:
        marks.append("top-level system")
    if list(obj)[:1] == ["max_tokens"]:
        marks.append("max_tokens first")
    tools = obj.get("tools")
    if isinstance(tools, list) and any(isinstance(t, dict) and "input_schema" in t for t in tools):
        marks.append("input_schema tools")
    typed = {"tool_use", "tool_result", "thinking", "redacted_thinking", "document", "image", "server_tool_use"}
    for m in obj["messages"]:
        content = m.get("content") if isinstance(m, dict) else None
        if isinstance(content, list) and any(isinstance(b, dict) and isinstance(b.get("type"), str)
                                             and b["type"] in typed for b in content):
            marks.append("typed content blocks")
            break
    return marks


def _body_dialect(obj: Any) -> str | None:
    from . import detect

    if anthropic_marks(obj):
        return "anthropic-messages"
    try:
        return detect(obj).name
    except InputError:
        return None


#: body shapes: dialects whose requests share their top-level structure
_SHAPES = ({"openai-chat", "deepseek", "dashscope", "vllm", "sglang", "anthropic-messages"},  # model + messages
           {"openai-responses"},  # input
           {"gemini"})  # contents


def _fits(dialect: str, body: str | None) -> bool:
    """Can a body that looks like ``body`` be a request of ``dialect``? (Same
    top-level shape: a plain ``model`` + ``messages`` body is a valid request
    of every Chat-shaped dialect and of the Messages API.)"""
    if body is None or body == dialect:
        return True
    return any(dialect in shape and body in shape for shape in _SHAPES)


def _accepts(dialect: str, obj: Any) -> bool:
    """Does the dialect itself recognise the body? (A dialect registered by a
    plugin belongs to no built-in shape; its own ``detect`` decides.)"""
    from . import get

    try:
        return bool(get(dialect).detect(obj))
    except Exception:  # noqa: BLE001 - a detect that cannot read the body does not accept it
        return False


def _family(dialect: str) -> str:
    try:
        return providers.for_dialect(dialect).name
    except UnknownName:
        return dialect


def _registered(dialect: str) -> bool:
    from . import names

    return dialect in names()


def _body_model(obj: Any) -> str | None:
    return obj["model"] if isinstance(obj, dict) and isinstance(obj.get("model"), str) else None


def detect_request(
    obj: Any,
    *,
    url: str | None = None,
    meta_dialect: str | None = None,
    meta_model: str | None = None,
    override: str | None = None,
    path: str | None = None,
) -> Detection:
    """Weigh URL, metadata and body (see the module docstring). ``obj`` is
    the parsed body. :class:`InputError` when nothing identifies it."""
    endpoint = providers.from_url(url) if url else None
    model = _body_model(obj) or meta_model or (endpoint.model if endpoint else None)
    body = _body_dialect(obj)
    if override:
        from . import get

        try:
            d = get(override).name
        except UnknownName as exc:
            raise InputError(str(exc), path=path) from None
        others = [f"URL says {endpoint.dialect}" for _ in [0] if endpoint and endpoint.dialect != d]
        others += [f"body looks like {body}" for _ in [0] if body and not _fits(d, body) and body != d]
        family = endpoint.provider if endpoint and endpoint.dialect == d else _family(d)
        return Detection(d, family, model, f"--provider {override}",
                         ("; ".join(others) + f"; --provider {override} wins") if others else None)
    if endpoint is not None:
        why = f"URL: {endpoint.rule}"
        if not _registered(endpoint.dialect):
            return Detection(endpoint.dialect, endpoint.provider, model, why, supported=False)
        marks = anthropic_marks(obj)
        if endpoint.dialect in OPENAI_FAMILY and marks:
            fam = endpoint.provider
            try:
                owns = any(r.dialect == "anthropic-messages" for r in providers.get(fam).routes)
            except UnknownName:
                owns = False
            family = fam if owns else "anthropic"
            return Detection("anthropic-messages", family, model, f"body marks: {', '.join(marks)}",
                             f"the URL ({endpoint.rule}) says {endpoint.dialect}, but the body has Anthropic-only "
                             f"marks ({', '.join(marks)}): read as anthropic-messages")
        if not (_fits(endpoint.dialect, body) or _accepts(endpoint.dialect, obj)):
            return Detection(body, _family(body), model, f"body marks ({body})",  # type: ignore[arg-type]
                             f"the URL ({endpoint.rule}) says {endpoint.dialect}, but the body is not a request "
                             f"of that shape: read as {body}")
        return Detection(endpoint.dialect, endpoint.provider, model, why)
    if meta_dialect and _registered(meta_dialect):
        if _fits(meta_dialect, body) and not (meta_dialect in OPENAI_FAMILY and body == "anthropic-messages"):
            return Detection(meta_dialect, _family(meta_dialect), model, f"snapshot metadata: {meta_dialect}")
        conflict = f"the snapshot metadata says {meta_dialect}, but the body looks like {body}: read as {body}"
        return Detection(body, _family(body), model, f"body marks ({body})", conflict)  # type: ignore[arg-type]
    if body is None:
        from . import names

        raise InputError("cannot detect the provider of this body; pass --provider (known: "
                         + ", ".join(names()) + ")", path=path)
    return Detection(body, _family(body), model, f"body marks ({body})")


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


__all__ += ["parse_body"]


def describe_bytes(url: str | None, body: bytes) -> tuple[str | None, str | None, str | None, str | None]:
    """``(provider, family, model, conflict)`` of a request, from its URL and
    body: ``provider`` is the wire dialect name (``openai-chat``), ``family``
    the cache/price family (``openai``), ``conflict`` what the evidence
    disagreed on (``None`` when it agreed).

    The evidence is weighed by :func:`fidelity.wire.evidence.detect_request`:
    the URL first (a DeepSeek body looks like an OpenAI one), then the body;
    Anthropic-only marks are never read as an OpenAI-family dialect. The
    model comes from the body, else the URL (Gemini ``models/<model>:``,
    Azure deployments, Bedrock and Vertex AI model ids).
    """
    obj: Any = None
    if body.lstrip()[:1] == b"{":
        try:
            obj = orjson.loads(body)
        except orjson.JSONDecodeError:
            obj = None
    model = obj.get("model") if isinstance(obj, dict) and isinstance(obj.get("model"), str) else None
    if model is None and url:
        m = re.search(r"/models/([^/:]+)", unquote(urlsplit(url).path))
        model = m.group(1) if m else None
    try:
        found = detect_request(obj, url=url)
    except InputError:  # nothing identifies it
        endpoint = providers.from_url(url) if url else None
        if endpoint is None:
            return None, None, model, None
        return endpoint.dialect, endpoint.provider, model or endpoint.model, None
    return found.dialect, found.family, found.model or model, found.conflict
