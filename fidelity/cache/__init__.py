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
``llama.cpp``. The three engines are one :class:`EngineCache` with the
engine's settings (``cache.get("vllm", block_size=128)``; defaults in
``ENGINE_DEFAULTS``). ``for_provider`` maps a wire dialect's provider family (and
optionally a model, for per-model minimums) to its model.
"""

from __future__ import annotations

from typing import Callable

from ..errors import UnknownName
from ._base import CacheModel, CacheOutcome, PromptTokens, as_token_array, common_prefix
from .anthropic import ANTHROPIC_MINIMUMS, AnthropicCache, anthropic_minimum
from .dashscope import DashScopeExplicitCache, DashScopeImplicitCache
from .deepseek import DEEPSEEK_UNIT, DeepSeekCache
from .gemini import GEMINI_MINIMUMS, GeminiImplicitCache, gemini_minimum
from .engine import ENGINE_DEFAULTS, EngineCache, EngineDefault, engine_default
from .engine import llamacpp as LlamaCppCache
from .engine import sglang as SGLangCache
from .engine import vllm as VLLMCache
from .openai import OpenAICache

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
    "EngineCache",
    "EngineDefault",
    "ENGINE_DEFAULTS",
    "engine_default",
    "VLLMCache",
    "SGLangCache",
    "LlamaCppCache",
    "DEEPSEEK_UNIT",
    "ANTHROPIC_MINIMUMS",
    "GEMINI_MINIMUMS",
    "anthropic_minimum",
    "gemini_minimum",
    "get",
    "for_provider",
    "names",
    "register",
]

_FACTORIES: dict[str, Callable[..., CacheModel]] = {
    "openai": OpenAICache,
    "anthropic": AnthropicCache,
    "deepseek": DeepSeekCache,
    "gemini": GeminiImplicitCache,
    "dashscope": DashScopeImplicitCache,
    "dashscope-explicit": DashScopeExplicitCache,
    "vllm": VLLMCache,
    "sglang": SGLangCache,
    "llama.cpp": LlamaCppCache,
}
_ALIASES = {"llamacpp": "llama.cpp", "llama-cpp": "llama.cpp", "qwen": "dashscope", "google": "gemini"}
_MODEL_AWARE = {"anthropic", "gemini"}


def names() -> list[str]:
    return sorted(_FACTORIES)


def register(name: str, factory: Callable[..., CacheModel]) -> None:
    """Add a cache model class (or factory) under ``name``."""
    _FACTORIES[name] = factory


def get(name: str, model: str | None = None, **settings: object) -> CacheModel:
    """A fresh cache model called ``name``; ``model`` selects per-model
    minimums where the provider documents them (Anthropic, Gemini);
    ``settings`` go to the factory (engine settings such as ``block_size``,
    ``capacity_tokens``, ``backend`` for ``vllm``, ``sglang``, ``llama.cpp``)."""
    key = _ALIASES.get(name, name)
    try:
        factory = _FACTORIES[key]
    except KeyError:
        raise UnknownName("cache model", name, list(_FACTORIES)) from None
    if key in _MODEL_AWARE and model is not None:
        return factory(model, **settings)
    return factory(**settings)


def for_provider(provider: str, model: str | None = None) -> CacheModel:
    """The cache model of a provider family (``openai``, ``anthropic``,
    ``deepseek``, ``gemini``, ``dashscope``, ``vllm``, ``sglang``, ``llama.cpp``)."""
    return get(provider, model)
