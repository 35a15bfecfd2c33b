"""The Gemini estimate's framing (fidelity.tokens.framing_estimate): Gemini
bills the text of a prompt with no per-request count and about one token a
turn and one a system instruction, each on a body modelled on a recorded one
(pydantic-ai's Gemini cassettes, the public corpus's fit side)."""

from __future__ import annotations

import orjson

from fidelity.tokens import get
from fidelity.tokens.framing_estimate import CONSTANTS
from fidelity.tokens_check import count_prompt


def _count(body: dict, model: str) -> int:
    return count_prompt(orjson.dumps(body), dialect="gemini", model=model).tokens


def _turn(text: str, role: str = "user") -> dict:
    return {"parts": [{"text": text}], "role": role}


def test_one_word_prompt_is_within_a_token() -> None:
    """test_google_extra_headers: "Hello" billed 2 on gemini-1.5-flash (the
    constants before issue 31 counted 3 and a system instruction 3 more).
    Gemini 1.0 to 2.0 bill no turn token on most single-turn fit rows
    (test_gemini_generations), so this one counts its text alone, 1."""
    body = {"contents": [_turn("Hello")], "generationConfig": {}}
    assert _count(body, "gemini-1.5-flash") == 1
    assert _count(body, "gemini-2.5-flash") == 2


def test_system_instruction_adds_its_text_and_one_token() -> None:
    """test_google_model_thinking_config: "What is the capital of France?" with
    the instruction "You are a helpful assistant." billed 15 on gemini-2.5-pro."""
    body = {"contents": [_turn("What is the capital of France?")], "generationConfig": {},
            "systemInstruction": {"parts": [{"text": "You are a helpful assistant."}], "role": "user"}}
    assert _count(body, "gemini-2.5-pro") == 15
    plain = {k: v for k, v in body.items() if k != "systemInstruction"}
    text = get("gemini-calibrated").count("You are a helpful assistant.")
    assert _count(body, "gemini-2.5-pro") - _count(plain, "gemini-2.5-pro") == text + round(CONSTANTS["gemini"]["system"])


def test_turns_add_one_token_each() -> None:
    one = {"contents": [_turn("Hi")]}
    three = {"contents": [_turn("Hi"), _turn("Hello! How can I help?", "model"), _turn("Tell me a joke")]}
    tok = get("gemini-calibrated")
    extra = tok.count("Hello! How can I help?") + tok.count("Tell me a joke")
    assert _count(three, "gemini-2.5-flash") - _count(one, "gemini-2.5-flash") == extra + 2 * round(
        CONSTANTS["gemini"]["message"])
    assert round(CONSTANTS["gemini"]["base"]) == 0  # no per-request count
