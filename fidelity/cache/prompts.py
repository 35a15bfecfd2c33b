"""Wire bodies as the provider's cache keys them: :func:`cache_prompt` turns
one request body's bytes into a :class:`SimRequest` through the one builder
(:class:`fidelity.cache.builder.PromptIds`), for ``diff``, ``replay``,
``report``, calibration and the proxy (the scan calls the builder itself).
"""

from __future__ import annotations

import threading
from collections.abc import Hashable, Sequence
from dataclasses import dataclass, replace
from typing import Any

from .. import wire
from ..errors import InputError
from ..tokens.billed import prompt_tokenizer
from ..wire.evidence import detect_request
from ..wire.spans import parsed
from .builder import PromptIds, element_handler
from .memo import TokenMemo
from .simulator import SimRequest
from .whole_view import MEMO_BODY, remember

__all__ = ["CachePrompt", "cache_prompt"]


@dataclass(frozen=True)
class CachePrompt:
    """One body ready for the simulator, and what it was read as."""

    request: SimRequest
    dialect: str
    provider: str
    cache_model: str
    model: str
    tokenizer: str
    estimated: bool
    #: Anthropic: where the tools, system and messages levels start in the prompt
    levels: tuple[int, int, int] | None = None
    #: each cache-view segment's billed ids (:attr:`fidelity.cache.builder.Built.ids`)
    segment_ids: tuple[Any, ...] = ()


@dataclass(frozen=True)
class _Body:
    """What the builder reads of a request (the scan's records carry the same fields)."""

    dialect: wire.Dialect
    provider: str
    model: str
    body: Any
    raw_body: bytes


def cache_prompt(body: bytes, *, dialect: str | None = None, model: str | None = None,
                 time: float | None = None, label: Hashable | None = None,
                 output: Sequence[int] = (), path: str | None = None,
                 endpoint: str | None = None, provider: str | None = None) -> CachePrompt:
    """``body`` as its provider's cache sees it. ``dialect`` defaults to
    detection, ``model`` to the body's; ``output``: the reply's ids where
    known; ``endpoint``: the URL the body went to (``None``: the provider's
    own API); ``provider``: the cache's provider where it is not the
    dialect's (a gateway's URL). Errors name ``path``."""
    body = bytes(body)
    if len(body) > MEMO_BODY:
        return _cache_prompt(body, dialect, model, time, label, output, path, endpoint, provider)
    key = (body, dialect, model, endpoint, provider, tuple(output))
    hit = _PROMPTS.get(key)
    if hit is None:
        hit = _cache_prompt(body, dialect, model, time, label, output, path, endpoint, provider)
        remember(_PROMPTS, key, hit)
    elif (hit.request.time, hit.request.label) != (time, label):
        hit = replace(hit, request=replace(hit.request, time=time, label=label))
    return hit


#: the last bodies read (a report asks for each parent and child body many
#: times, at other times and under other labels): each is built once; the
#: time and label are the caller's
_PROMPTS: dict[tuple[Any, ...], CachePrompt] = {}
#: the builder every cache_prompt call shares (its memo holds each element's
#: ids, so a body that repeats another's history tokenizes only what is new);
#: the proxy serves requests on threads
_BUILDER = PromptIds(TokenMemo(64 << 20), digests=True)
_LOCK = threading.Lock()


def _cache_prompt(body: bytes, dialect: str | None, model: str | None, time: float | None,
                  label: Hashable | None, output: Sequence[int], path: str | None, endpoint: str | None,
                  provider: str | None) -> CachePrompt:
    d = wire.get(dialect) if dialect else None
    # the whole-view builder reads the bytes; detection, the model and the element builder, the value
    need = d is None or model is None or element_handler(d, provider or d.provider) is not None
    obj = parsed(body, path) if need else None
    if d is None:  # the one detection rule: the URL first, then the body
        d = wire.get(detect_request(obj, url=endpoint, path=path).dialect)
    if model is None:
        model = obj.get("model") if isinstance(obj, dict) and isinstance(obj.get("model"), str) else None
        if model is None:
            raise InputError("the body names no model; pass the model", path=path)
    prov = provider or d.provider
    tok = prompt_tokenizer(model, prov, d.name)
    try:
        with _LOCK:
            built = _BUILDER.build(_Body(d, prov, model, obj, body), None, None, time, label, endpoint, output)
    except InputError as exc:
        raise (exc.at(path) if path else exc) from None
    return CachePrompt(built.request, d.name, prov, built.cache_model, model, tok.name, tok.estimated, built.levels,
                       built.ids)
