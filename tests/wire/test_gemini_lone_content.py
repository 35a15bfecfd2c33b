"""A lone ``contents`` / ``parts`` object is read as a one-element list.

Gemini's API answers bodies that send ``"contents": {"role": ..., "parts":
{"text": ...}}`` (sublayerapp/sublayer spec/vcr_cassettes/gemini/42.yml:
billed 14 prompt tokens for the question below); the cache view counted
such a body as no message at all."""

from __future__ import annotations

import json

from hypothesis import given
from hypothesis import strategies as st

from fidelity import wire
from fidelity.tokens import billed

GEMINI = wire.get("gemini")
QUESTION = "What is the meaning of life, the universe, and everything?"
LONE = json.dumps({"contents": {"role": "user", "parts": {"text": QUESTION}}}, separators=(",", ":")).encode()


def _billed(body: bytes) -> int:
    segs = GEMINI.cache_view(body)
    tok = billed.prompt_tokenizer("gemini-1.5-flash-latest", "gemini", "gemini")
    ids = billed.segment_ids(tok, segs, dialect="gemini", provider="gemini", model="gemini-1.5-flash-latest")
    return sum(len(a) for a in ids)


def test_lone_content_is_one_message_segment() -> None:
    msgs = [s for s in GEMINI.cache_view(LONE) if s.kind == "message"]
    assert [(s.index, s.pointer) for s in msgs] == [(0, "/contents")]
    assert json.loads(msgs[0].data)["parts"]["text"] == QUESTION
    assert GEMINI.detect(json.loads(LONE))


def test_lone_content_parses_to_one_user_message() -> None:
    req = GEMINI.parse(LONE, model="gemini-1.5-flash-latest")
    assert [m.role for m in req.messages] == ["user"]
    assert [p.text for p in req.messages[0].parts] == [QUESTION]


def test_lone_content_counts_its_text() -> None:
    # 14 billed in the recording; the o200k-based estimate counts 13 or more
    assert 12 <= _billed(LONE) <= 16


@given(st.text(st.characters(codec="utf-8", exclude_categories=("Cs",)), min_size=1, max_size=60),
       st.sampled_from(["user", "model"]))
def test_lone_forms_bill_like_lists(text: str, role: str) -> None:
    listed = {"contents": [{"role": role, "parts": [{"text": text}]}]}
    lone = {"contents": {"role": role, "parts": {"text": text}}}
    assert _billed(json.dumps(lone).encode()) == _billed(json.dumps(listed).encode())
