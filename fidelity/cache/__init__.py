"""Provider cache models, the cache simulator and the one builder of its input.

Each cache model is a small class with its provider's documented rules and
their sources; it computes nothing itself (:func:`get` looks one up by name
or provider family). The simulator (:mod:`.simulator`: ``SimRequest`` →
``Prediction``) answers for every caller; :mod:`.builder` turns a body into
its input (:func:`fidelity.cache.prompts.cache_prompt` for a body's bytes).
Examples: docs/tokens-cache-prices.md.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from .. import providers
from .._registry import Registry
from ..errors import UnknownName
from . import minimums
from ._base import CacheModel, PromptTokens, as_token_array, common_prefix
from .anthropic import AnthropicCache
from .dashscope import DashScopeExplicitCache, DashScopeImplicitCache
from .deepseek import DEEPSEEK_UNIT, DeepSeekCache
from .engine import ENGINE_DEFAULTS, EngineCache, EngineDefault, engine_default
from .engine import llamacpp as LlamaCppCache
from .engine import sglang as SGLangCache
from .engine import vllm as VLLMCache
from .gemini import GeminiImplicitCache
from .openai import OpenAICache

__all__ = [
    "PromptTokens",
    "CacheModel",
    "common_prefix",
    "as_token_array",
    "OpenAICache",
    "AnthropicCache",
    "DeepSeekCache",
    "GeminiImplicitCache",
    "DashScopeImplicitCache",
    "DashScopeExplicitCache",
    "EngineCache",
    "EngineDefault",
    "ENGINE_DEFAULTS",
    "engine_default",
    "VLLMCache",
    "SGLangCache",
    "LlamaCppCache",
    "DEEPSEEK_UNIT",
    "minimums",
    "get",
    "for_provider",
    "names",
    "register",
]

_MODELS: Registry[Callable[..., CacheModel]] = Registry("cache model")
for _name, _factory in (
    ("openai", OpenAICache),
    ("anthropic", AnthropicCache),
    ("deepseek", DeepSeekCache),
    ("gemini", GeminiImplicitCache),
    ("dashscope", DashScopeImplicitCache),
    ("dashscope-explicit", DashScopeExplicitCache),
    ("vllm", VLLMCache),
    ("sglang", SGLangCache),
    ("llama.cpp", LlamaCppCache),
):
    _MODELS.add(_name, _factory)
_MODEL_AWARE = {"anthropic", "gemini"}


def names() -> list[str]:
    return sorted(_MODELS.names())


def register(name: str, factory: Callable[..., CacheModel]) -> None:
    """Add a cache model class (or factory) under ``name``."""
    _MODELS.add(name, factory)


def get(name: str, model: str | None = None, **params: Any) -> CacheModel:
    """A fresh cache model called ``name`` (a cache model name, or a provider
    family whose descriptor names one); ``model`` selects per-model minimums
    where the provider documents them (Anthropic, Gemini); ``params`` override
    the descriptor's cache parameters (engine settings such as a block size)."""
    key = name
    if name not in _MODELS:
        try:
            desc = providers.get(name)
        except UnknownName:
            raise UnknownName("cache model", name, _MODELS.names()) from None
        if desc.cache_model is None:
            raise UnknownName("cache model", name, _MODELS.names())
        key, params = desc.cache_model, {**desc.cache_params, **params}
    key = _MODELS.canonical(key)
    factory = _MODELS.get(key)
    if key in _MODEL_AWARE and model is not None:
        return factory(model, **params)
    return factory(**params)


def for_provider(provider: str, model: str | None = None) -> CacheModel:
    """The cache model of a provider family (``openai``, ``anthropic``,
    ``deepseek``, ``gemini``, ``dashscope``, ``vllm``, ``sglang``, ``llama.cpp``)
    as its descriptor in :mod:`fidelity.providers` names it."""
    return get(provider, model)
