"""Gemini thought signatures in the calibrated estimate
(fidelity.tokens.framing_estimate): a field-2 signature (base64 ``E...``) of
the current turn bills one token per ``GEMINI_SIGNATURE_CHARS`` characters,
placed at the end of the prompt; field-1 signatures (``C...``) and those of
earlier turns bill nothing. Bodies are modelled on pydantic-ai's
multimodal tool-return cassettes (the public corpus's fit side); the
signatures are synthetic strings of the recorded lengths."""

from __future__ import annotations

import orjson
from hypothesis import given
from hypothesis import strategies as st

from fidelity import wire
from fidelity.tokens.billed import media_in
from fidelity.tokens.framing_estimate import (
    GEMINI_SIGNATURE_CHARS,
    SIGNATURE,
    current_turn_start,
    segment_pieces,
    signature_tokens,
)
from fidelity.tokens_check import count_prompt

_TOOLS = [{"functionDeclarations": [{"description": "", "name": "get_file", "parameters_json_schema": {
    "additionalProperties": False, "properties": {}, "type": "object"}}]}]
_ASK = {"parts": [{"text": "Use the get_file tool now to retrieve a audio file, then describe what you received."}],
        "role": "user"}


def _call(sig: str, call_id: str = "pyd_ai_1") -> dict:
    return {"parts": [{"functionCall": {"args": {"name": "input_file_0.wav"}, "id": call_id, "name": "get_file"},
                       "thoughtSignature": sig}], "role": "model"}


def _result(call_id: str = "pyd_ai_1") -> dict:
    return {"parts": [{"functionResponse": {"id": call_id, "name": "get_file",
                                            "response": {"error": "1 validation error: name is not expected"}}}],
            "role": "user"}


def _body(contents: list[dict]) -> bytes:
    return orjson.dumps({"contents": contents, "generationConfig": {"responseModalities": ["TEXT"]},
                         "tools": _TOOLS})


def _count(contents: list[dict], model: str = "gemini-3-flash-preview") -> int:
    return count_prompt(_body(contents), dialect="gemini", model=model).tokens


def test_current_turn_signature_bills_what_the_recording_billed() -> None:
    """test_multimodal_tool_return_matrix[direct-binary-audio-google_gemini3],
    interaction 1: a 5,976-character field-2 signature on the function call
    that the function response answers; billed 1,342. Counted 142 before the
    signature was counted (89% under)."""
    sig = "E" + "v" * 5975
    got = _count([_ASK, _call(sig), _result()])
    assert abs(got - 1342) / 1342 < 0.10
    assert got - _count([_ASK, _call(""), _result()]) == round(5976 / GEMINI_SIGNATURE_CHARS)


def test_field_one_signature_bills_nothing() -> None:
    """Vertex AI and Gemini 2.5 signatures open with protobuf field 1 (``C...``):
    the recorded Vertex requests bill no more with them than without."""
    assert _count([_ASK, _call("C" + "x" * 3000), _result()]) == _count([_ASK, _call(""), _result()])


def test_signature_of_an_earlier_turn_bills_nothing() -> None:
    """A user message that is not a function response opens a new turn: the
    recording's next request (the file sent as a user part) billed 304 with
    the same 5,976-character signature in its history."""
    follow = {"parts": [{"text": "This is file 2d36ae:"}], "role": "user"}
    with_sig = _count([_ASK, _call("E" + "v" * 5975), _result(), follow])
    assert with_sig == _count([_ASK, _call(""), _result(), follow])


def test_current_turn_starts_at_the_last_user_message_that_is_not_a_function_response() -> None:
    contents = [_ASK, _call("E"), _result(), _call("E", "pyd_ai_2"), _result("pyd_ai_2")]
    assert current_turn_start(contents) == 0
    assert current_turn_start([*contents, _ASK]) == 5
    assert current_turn_start([_call("E")]) == -1
    assert current_turn_start([None, _ASK, None]) == 1


def test_signature_tokens_reads_both_spellings() -> None:
    snake = {"parts": [{"function_call": {"name": "f", "args": {}}, "thought_signature": "E" * 49}]}
    camel = {"parts": [{"functionCall": {"name": "f", "args": {}}, "thoughtSignature": "E" * 49}]}
    assert signature_tokens(snake) == signature_tokens(camel) == round(49 / GEMINI_SIGNATURE_CHARS)
    assert signature_tokens({"parts": "not a list"}) == 0
    assert signature_tokens("not a content") == 0


def _pieces(contents: list[dict]) -> list[list]:
    segs = wire.get("gemini").cache_view(_body(contents))
    return segment_pieces("gemini", segs, "gemini-3-flash-preview", media_in)


@given(st.lists(st.tuples(st.integers(min_value=0, max_value=4000), st.sampled_from("EC")), min_size=1,
                max_size=4))
def test_signatures_only_add_tokens_at_the_end(calls: list[tuple[int, str]]) -> None:
    """Whatever the signatures of the current turn, every segment but the last
    holds the same pieces as without them (the prefix a cache reads is
    unchanged) and the last one gains exactly the field-2 signatures' tokens."""
    signed: list[dict] = [_ASK]
    plain: list[dict] = [_ASK]
    expected = 0
    for i, (n, first) in enumerate(calls):
        sig = first + "a" * n
        signed += [_call(sig, f"c{i}"), _result(f"c{i}")]
        plain += [_call("", f"c{i}"), _result(f"c{i}")]
        expected += round(len(sig) / GEMINI_SIGNATURE_CHARS) if first == "E" else 0
    got, base = _pieces(signed), _pieces(plain)
    assert len(got) == len(base)
    assert got[:-1] == base[:-1]
    assert got[-1].count(SIGNATURE) == expected
    assert [p for p in got[-1] if p is not SIGNATURE] == [p for p in base[-1] if p is not SIGNATURE]
