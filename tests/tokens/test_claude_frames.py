"""Claude estimate frames measured on the fit side (issue #31): extended
thinking, plain-text documents, structured-output schemas. Each body is a
small copy of a public recording (its repository and path in a comment) and
is checked against the prompt that recording billed."""

from __future__ import annotations

import json

import orjson
import pytest
from hypothesis import given
from hypothesis import strategies as st

from fidelity.tokens.framing_estimate import CONSTANTS, schema_text
from fidelity.tokens_check import count_prompt


def _count(body: dict) -> int:
    return count_prompt(orjson.dumps(body), dialect="anthropic-messages", model=body["model"]).tokens


def _user(*blocks: dict) -> list[dict]:
    return [{"role": "user", "content": list(blocks)}]


def _text(t: str) -> dict:
    return {"type": "text", "text": t}


def test_extended_thinking_frame() -> None:
    # pydantic/pydantic-ai tests/models/cassettes/test_anthropic/test_anthropic_model_thinking_part.yaml
    # (interaction 0): billed 43 on Sonnet 4.5 (the committed 25 gave 39)
    body = {"max_tokens": 4096, "messages": _user(_text("How do I cross the street?")), "model": "claude-sonnet-4-5",
            "stream": False, "thinking": {"budget_tokens": 1024, "type": "enabled"}}
    assert abs(_count(body) - 43) <= 1


def test_plain_text_document_frame() -> None:
    # pydantic/pydantic-ai tests/models/cassettes/test_anthropic/test_text_document_as_binary_content_input.yaml:
    # billed 57 on Sonnet 4.5; its text alone and the message frame came to 19
    doc = {"source": {"data": "Dummy TXT file\n", "media_type": "text/plain", "type": "text"}, "type": "document"}
    body = {"max_tokens": 4096, "messages": _user(_text("What does this text file say?"), doc),
            "model": "claude-sonnet-4-5", "stream": False}
    assert abs(_count(body) - 57) <= 1
    without = {**body, "messages": _user(_text("What does this text file say?"), _text("Dummy TXT file\n"))}
    assert _count(body) - _count(without) == round(CONSTANTS["anthropic"]["document"]) > 0


def test_pdf_document_has_no_text_frame() -> None:
    """A base64 PDF is counted by the media rule alone: the plain-text frame is not added."""
    from fidelity.tokens.billed import media_in
    from fidelity.tokens.framing_estimate import DOCUMENT, message_block_pieces

    pdf = {"type": "document", "source": {"type": "base64", "media_type": "application/pdf", "data": "JVBERi0xLjQK"}}
    text = {"type": "document", "source": {"type": "text", "media_type": "text/plain", "data": "x"}}
    blocks = message_block_pieces({"role": "user", "content": [pdf, text]}, media_in)
    assert blocks is not None
    assert DOCUMENT not in blocks[0] and blocks[1].count(DOCUMENT) == round(CONSTANTS["anthropic"]["document"])


@pytest.mark.parametrize("schema, billed", [
    # pydantic/pydantic-ai tests/models/anthropic/cassettes/test_output/test_no_tools_native_output_strict_true.yaml
    ({"additionalProperties": False, "properties": {"city": {"type": "string"}, "country": {"type": "string"},
                                                   "population": {"type": "integer"}},
      "required": ["city", "country", "population"], "type": "object"}, 196),
    # simonw/llm-anthropic tests/cassettes/test_anthropic/test_schema_prompt.yaml (../shared/real)
    ({"type": "object", "title": "Dog", "properties": {"name": {"type": "string", "title": "Name"},
                                                        "age": {"type": "integer", "title": "Age"},
                                                        "bio": {"type": "string", "title": "Bio"}},
      "additionalProperties": False, "required": ["name", "age", "bio"]}, 230),
])
def test_structured_output_schema(schema: dict, billed: int) -> None:
    """The schema is read one member a line: the two schemas above bill 34
    apart (compact JSON put them 18 apart, and the Dog 5.7 % under)."""
    prompt = "Tell me about London" if billed == 196 else "Invent a good dog"
    body = {"max_tokens": 4096, "messages": _user(_text(prompt)), "model": "claude-sonnet-4-5",
            "output_config": {"format": {"schema": schema, "type": "json_schema"}}, "stream": False}
    assert abs(_count(body) - billed) / billed <= 0.01


json_values = st.recursive(st.none() | st.booleans() | st.integers() | st.text(max_size=8),
                           lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=6), inner,
                                                                                      max_size=3), max_leaves=12)


@given(schema=st.dictionaries(st.text(max_size=6).filter(lambda k: k != "schema"), json_values, max_size=4))
def test_schema_text_is_the_schema_one_member_a_line(schema: dict) -> None:
    """The text reads back as the schema (keys in order), wrapped in its
    format or not, with each member of a non-empty schema on a line of its own."""
    text = schema_text({"type": "json_schema", "schema": schema})
    assert text == schema_text(schema)
    back = json.loads(text)
    assert back == schema and list(back) == list(schema)
    assert text.count("\n") >= (len(schema) + 1 if schema else 0)
