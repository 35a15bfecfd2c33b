"""A log line's dialect, provider and model come from the one detection
(:func:`fidelity.wire.evidence.detect_request`), and so does the scan's
``detected`` flag (the splicer reads no line whose dialect the body or the
URL's path chose): each case below against the detection's own answer."""

from __future__ import annotations

from typing import Any

import orjson
import pytest

from fidelity.scan.records import BadLine, parse_record
from fidelity.wire.evidence import detect_request

CHAT = {"model": "gpt-4o", "messages": [{"role": "user", "content": "hi"}]}
CLAUDE = {"model": "claude-sonnet-4-5", "max_tokens": 10, "system": [{"type": "text", "text": "s"}],
          "messages": [{"role": "user", "content": [{"type": "text", "text": "hi",
                                                      "cache_control": {"type": "ephemeral"}}]}]}

CASES = [
    # (line, detected): a known provider's URL, the line's provider, or neither
    ({"url": "https://api.openai.com/v1/chat/completions", "body": CHAT}, False),
    ({"provider": "openai-chat", "body": CHAT}, False),
    ({"body": CHAT}, True),
    ({"url": "https://llm.example.net/v1/chat/completions", "body": CHAT}, True),
    # the body overrules what the line names: its marks decided
    ({"provider": "openai-chat", "body": CLAUDE}, True),
    ({"url": "https://api.openai.com/v1/chat/completions", "body": CLAUDE}, True),
]


@pytest.mark.parametrize("line,detected", CASES)
def test_records_take_the_detection(line: dict[str, Any], detected: bool) -> None:
    rec = parse_record(orjson.dumps(line))
    d = detect_request(line["body"], url=line.get("url"), meta_dialect=line.get("provider"))
    assert (rec.dialect.name, rec.provider, rec.model) == (d.dialect, d.family, d.model)
    assert rec.detected is detected, d.why


def test_nothing_detected_is_a_bad_line() -> None:
    with pytest.raises(BadLine) as got:
        parse_record(orjson.dumps({"body": {"model": "m", "prompt_text": "hi"}}))
    assert got.value.reason == "unknown provider"
