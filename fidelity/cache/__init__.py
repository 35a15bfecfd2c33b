"""Provider cache models: how many prompt tokens a provider serves from cache.

Each model is one small class with its documented rules and sources in the
docstring and one question answered by :meth:`CacheModel.predict`: given the
earlier requests (token sequences with times) and this one, how many tokens
are cached, written and uncached. :meth:`CacheModel.reusable` gives the
rule alone: of a shared prefix of a given length, how much the cache serves.

>>> from fidelity import cache
>>> m = cache.get("openai")
>>> parent = cache.PromptTokens(tuple(range(3000)), time=0)
>>> child = cache.PromptTokens(tuple(range(2000)) + (9,) * 900, time=5)
>>> m.predict([parent], child)
CacheOutcome(cached=1920, written=896, uncached=980)

Registry names: ``openai``, ``anthropic``, ``deepseek``, ``gemini``,
``dashscope`` (implicit), ``dashscope-explicit``, ``vllm``, ``sglang``,
``llama.cpp``. ``for_provider`` maps a wire dialect's provider family (and
optionally a model, for per-model minimums) to its model.
"""

from __future__ import annotations

from typing import Any, Callable

from .. import providers
from .._registry import Registry
from ..errors import UnknownName
from ._base import CacheModel, CacheOutcome, PromptTokens, as_token_array, common_prefix
from .anthropic import ANTHROPIC_MINIMUMS, AnthropicCache, anthropic_minimum
from .dashscope import DashScopeExplicitCache, DashScopeImplicitCache
from .deepseek import DEEPSEEK_UNIT, DeepSeekCache
from .gemini import GEMINI_MINIMUMS, GeminiImplicitCache, gemini_minimum
from . import minimums
from .llamacpp import LlamaCppCache
from .openai import OpenAICache
from .sglang import SGLangCache
from .vllm import VLLMCache

__all__ = [
    "PromptTokens",
    "CacheOutcome",
    "CacheModel",
    "common_prefix",
    "as_token_array",
    "OpenAICache",
    "AnthropicCache",
    "DeepSeekCache",
    "GeminiImplicitCache",
    "DashScopeImplicitCache",
    "DashScopeExplicitCache",
    "VLLMCache",
    "SGLangCache",
    "LlamaCppCache",
    "DEEPSEEK_UNIT",
    "ANTHROPIC_MINIMUMS",
    "GEMINI_MINIMUMS",
    "anthropic_minimum",
    "minimums",
    "gemini_minimum",
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
