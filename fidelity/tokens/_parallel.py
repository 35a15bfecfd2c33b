"""Tokenize many texts on all the cores a process may use: plain threads, one
contiguous batch per worker balanced by length (both engines release the GIL:
tiktoken's ``CoreBPE`` runs in ``py.allow_threads``, tiktoken ``src/py.rs``;
HF ``tokenizers`` encodes in Rust). The ids do not depend on the number of workers.
"""

from __future__ import annotations

import os
from array import array
from collections.abc import Sequence

from ._base import Tokenizer

__all__ = ["PARALLEL_MIN_CHARS", "encode_texts", "workers"]

#: below this many characters in all, texts are encoded on the calling thread
PARALLEL_MIN_CHARS = 256 * 1024


def workers() -> int:
    """Threads to encode with: ``FIDELITY_THREADS`` when set (``1`` turns
    the threads off), else the CPUs this process may run on."""
    env = os.environ.get("FIDELITY_THREADS", "").strip()
    if env.isdigit() and int(env) > 0:
        return int(env)
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except (AttributeError, OSError):  # not on Linux
        return max(1, os.cpu_count() or 1)


def _batches(texts: Sequence[str | bytes], n: int) -> list[range]:
    """Cut ``range(len(texts))`` into at most ``n`` contiguous runs of about
    equal total length."""
    total = sum(map(len, texts))
    runs: list[range] = []
    start, acc = 0, 0
    for i, text in enumerate(texts):
        acc += len(text)
        if acc * n >= total * (len(runs) + 1) and len(runs) < n - 1:
            runs.append(range(start, i + 1))
            start = i + 1
    runs.append(range(start, len(texts)))
    return [r for r in runs if len(r)]


def _ids(tokenizer: Tokenizer, text: str | bytes) -> array[int]:
    """Ids of a text; bytes decoded here (one at a time), invalid ones as U+FFFD."""
    return tokenizer.ids(text.decode("utf-8", "replace") if isinstance(text, bytes) else text)


def encode_texts(tokenizer: Tokenizer, texts: Sequence[str | bytes], threads: int | None = None) -> list[array[int]]:
    """``[tokenizer.ids(t) for t in texts]`` (bytes decoded as UTF-8), on
    ``threads`` (default :func:`workers`) when there is enough text; each
    array is shared with the tokenizer's memo: read-only."""
    n = workers() if threads is None else threads
    if n <= 1 or len(texts) < 2 or sum(map(len, texts)) < PARALLEL_MIN_CHARS:
        return [_ids(tokenizer, t) for t in texts]
    from concurrent.futures import ThreadPoolExecutor  # on demand: small inputs never need it

    runs = _batches(texts, n)
    with ThreadPoolExecutor(max_workers=len(runs), thread_name_prefix="fidelity-tokens") as pool:
        parts = list(pool.map(lambda run: [_ids(tokenizer, texts[i]) for i in run], runs))
    return [ids for part in parts for ids in part]
