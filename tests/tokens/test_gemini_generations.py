"""Gemini 1.0 to 2.0 bill a request's text and nothing per turn or for the
system instruction; 2.5 and later bill one token for each (the ``gemini-2.0``
and ``gemini`` tables of :data:`fidelity.tokens.framing_estimate.CONSTANTS`).

Bodies from pydantic/pydantic-ai tests/models/cassettes/test_google/ (fit
side): test_google_model_instructions.yaml, gemini-2.0-flash, billed 13;
the same question and instruction on gemini-2.5-flash bill 15
(docs/tokens-billed.md, "Gemini generations")."""

from __future__ import annotations

import json

import pytest

from fidelity.tokens.framing_estimate import table_of
from fidelity.tokens_check import count_prompt

BODY = json.dumps({
    "contents": [{"parts": [{"text": "What is the capital of France?"}], "role": "user"}],
    "systemInstruction": {"parts": [{"text": "You are a helpful assistant."}], "role": "user"},
}).encode()


def _count(model: str) -> int:
    return count_prompt(BODY, dialect="gemini", model=model).tokens


@pytest.mark.parametrize(("model", "table"), [
    ("gemini-2.0-flash", "gemini-2.0"), ("gemini-2.0-flash-exp", "gemini-2.0"), ("gemini-1.5-flash", "gemini-2.0"),
    ("models/gemini-1.5-pro-002", "gemini-2.0"), ("gemini-pro", "gemini-2.0"), ("gemini-1.0-pro-vision", "gemini-2.0"),
    ("gemini-2.5-flash", "gemini"), ("gemini-2.5-pro", "gemini"), ("gemini-3-flash-preview", "gemini"),
    ("gemini-3.5-flash", "gemini"), ("gemini-20-flash", "gemini"), ("gemini-pro-latest", "gemini"),
])
def test_table_of_reads_the_generation(model: str, table: str) -> None:
    assert table_of("gemini", model) == table


def test_early_generation_bills_the_text_alone() -> None:
    assert _count("gemini-2.0-flash") == 13


def test_later_generation_bills_a_token_per_turn_and_instruction() -> None:
    assert _count("gemini-2.5-flash") == 15
