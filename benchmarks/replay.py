"""Replay cost per request for sessions of N = 10, 100, 1,000 requests.

Each session is one growing conversation (every request repeats the one
before and adds ``NEW`` tokens), the shape that makes a pairwise replay
O(N^2): request i shares i * NEW tokens with the one before. The simulator
(:class:`fidelity.cache.simulator.Simulator`) jumps along stored paths with
one memcmp per branch and creates nodes only for new blocks, so its Python
work per request is proportional to the new tokens; what grows with the
prompt is one vectorised comparison (numpy, memory speed) per jump, the same
order as reading the request at all. Printed: total seconds, microseconds
per request and its ratio to N = 10, and the Python-level steps per request
(trie jumps and new blocks) with their ratio: flat steps mean O(total new
tokens) Python work; a pairwise replay would grow both by 100x. The
``anthropic`` rows replay explicit breakpoints (Claude Code's pattern: one
breakpoint at the end of each request, a content block every ``NEW``
tokens); its store keeps entries, not a trie, so it reports no steps.

Run: ``PYTHONPATH=. python3 benchmarks/replay.py [N ...]`` (default 10 100 1000)
"""

from __future__ import annotations

import random
import sys
import time
from array import array
from typing import Any

from fidelity.cache.simulator import SimRequest, Simulator

NEW = 300  # tokens each request adds


def session(n: int, seed: int = 0, explicit: bool = False) -> list[SimRequest]:
    rng = random.Random(seed)
    toks = array("q")
    out = []
    for i in range(n):
        toks = toks + array("q", (rng.randrange(200_000) for _ in range(NEW)))
        if explicit:
            ends = tuple(range(NEW, len(toks) + 1, NEW))
            out.append(SimRequest(toks, time=float(i), label=i, breakpoints=(len(toks),), blocks=ends))
        else:
            out.append(SimRequest(toks, time=float(i), label=i))
    return out


def bench(provider: str, n: int, **params: Any) -> tuple[float, int]:
    reqs = session(n, explicit=provider == "anthropic")
    sim = Simulator(provider, **params)
    elapsed = 0.0
    for r in reqs:
        r.tokens.tobytes()  # type: ignore[attr-defined]  # a scan feeds a request it has just built: warm
        start = time.perf_counter()
        sim.feed(r)
        elapsed += time.perf_counter() - start
    steps = sum(getattr(st, "steps", 0) for st in sim._stores.values())  # noqa: SLF001
    return elapsed, steps


def main() -> None:
    sizes = [int(a) for a in sys.argv[1:]] or [10, 100, 1000]
    for provider, params in (("openai", {}), ("deepseek", {}), ("vllm", {"block_size": 16}), ("gemini", {}),
                             ("anthropic", {})):
        base = base_steps = None
        for n in sizes:
            total, steps = bench(provider, n, **params)
            per = total / n * 1e6
            per_steps = steps / n
            base = base or per
            base_steps = base_steps or per_steps or 1.0
            print(f"{provider:9s} N={n:5d}  total {total:7.3f} s  {per:8.1f} us/request (ratio {per / base:5.2f})  "
                  f"python steps/request {per_steps:6.1f} (ratio {per_steps / base_steps:4.2f})  "
                  f"prompt tokens at the end {n * NEW:,}")


if __name__ == "__main__":
    main()
