"""The scaled (calibrated) tokenizers are used from threads
(``tokens._parallel.encode_texts``): each thread must see a whole stretch
pattern while another grows it."""

from __future__ import annotations

import random

from fidelity.tokens._parallel import encode_texts
from fidelity.tokens.calibrated import CLAUDE_FACTOR, ScaledTokenizer


def test_threads_growing_the_pattern_get_the_ids_of_one_thread() -> None:
    rng = random.Random(0)
    texts = [("word " * rng.choice([2, 3, 5, 4000, 9000])) + str(i) for i in range(200)]
    ref = ScaledTokenizer("claude-ref", "o200k_base", CLAUDE_FACTOR, source="test")
    want = [ref.ids(t) for t in texts]
    for _ in range(8):  # a fresh tokenizer each time: its pattern grows while threads read it
        tok = ScaledTokenizer("claude-test", "o200k_base", CLAUDE_FACTOR, source="test")
        assert encode_texts(tok, texts, threads=8) == want
