"""Requests to OpenAI's Responses API made in its first weeks billed text the
body does not show; they are set apart (``server template``), by the time the
recording gives: its ``Date`` header, else the response's ``created_at``.

Modelled on public recordings of the same bodies before and after the change:

* simonw/llm-openai-plugin tests/cassettes/test_openai/test_options[options0].yaml
  (2025-03-21, gpt-4o-mini, ``say hi``: billed 27, the body renders to 9);
* pydantic/pydantic-ai tests/models/cassettes/test_openai_responses/test_openai_responses_system_prompt.yaml
  (2025-03-27, ``created_at`` only, gpt-4o with instructions: billed 42, renders to 24) and
  test_openai_responses_model_instructions.yaml (2025-04-07, the same body: billed 24).
"""

from __future__ import annotations

from pathlib import Path

import orjson
import yaml
from hypothesis import given
from hypothesis import strategies as st

from fidelity.server_side import RESPONSES_AS_TODAY, early_responses
from fidelity.tokens_check import check
from fidelity.traffic.apart import exchange, response_time

_URL = "https://api.openai.com/v1/responses"
_SAY_HI = {"input": [{"role": "user", "content": "say hi"}], "model": "gpt-4o-mini", "stream": False}
_SYSTEM = {"input": [{"content": "What is the capital of France?", "role": "user"}],
           "instructions": "You are a helpful assistant.", "model": "gpt-4o"}


def _response(created: int, billed: int, model: str) -> dict[str, object]:
    return {"id": "resp_1", "object": "response", "created_at": created, "model": model, "status": "completed",
            "output": [{"type": "message", "role": "assistant",
                        "content": [{"type": "output_text", "text": "Hi!", "annotations": []}]}],
            "usage": {"input_tokens": billed, "input_tokens_details": {"cached_tokens": 0}, "output_tokens": 3,
                      "total_tokens": billed + 3}}


def _cassette(path: Path, body: dict[str, object], created: int, billed: int, date: str | None) -> Path:
    headers = {"content-type": ["application/json"]}
    if date is not None:
        headers["date"] = [date]
    inter = {"request": {"method": "POST", "uri": _URL, "body": orjson.dumps(body).decode()},
             "response": {"status": {"code": 200, "message": "OK"}, "headers": headers,
                          "body": {"string": orjson.dumps(_response(created, billed, str(body["model"]))).decode()}}}
    path.write_text(yaml.safe_dump({"interactions": [inter], "version": 1}), encoding="utf-8")
    return path


def test_the_launch_weeks_are_set_apart_and_the_same_body_later_is_exact(tmp_path: Path) -> None:
    early = _cassette(tmp_path / "early.yaml", _SAY_HI, 1742527544, 27, "Fri, 21 Mar 2025 03:25:44 GMT")
    early_system = _cassette(tmp_path / "early_system.yaml", _SYSTEM, 1743075639, 42, None)
    later = _cassette(tmp_path / "later.yaml", _SYSTEM, 1744034383, 24, None)
    result = check([early, early_system, later])
    assert result.skipped == {"server template": 2}
    assert [(Path(r.path).name, r.billed, r.predicted) for r in result.rows] == [("later.yaml", 24, 24)]
    # the day before the change, without a created_at: the Date header decides
    assert check([_cassette(tmp_path / "d.yaml", _SAY_HI, 0, 27, "Sun, 06 Apr 2025 23:59:00 GMT")]).skipped == {
        "server template": 1}


def test_chat_completions_of_those_weeks_are_scored() -> None:
    body = orjson.dumps({"messages": [{"role": "user", "content": "say hi"}], "model": "gpt-4o-mini"})
    ex = exchange("x", 0, body, url="https://api.openai.com/v1/chat/completions", time=1742527544.0)
    assert ex.apart is None


def test_response_time_reads_created_at_and_created() -> None:
    assert response_time(b'{"id":"r","created_at":1743075639,"model":"gpt-4o"}') == 1743075639.0
    assert response_time(b'data: {"id":"c","created": 1744043573}\n\n') == 1744043573.0
    assert response_time(b'{"id":"r"}') is None and response_time(None) is None


@given(st.floats(min_value=1.6e9, max_value=1.9e9), st.sampled_from([None, "openai", "openrouter", "groq"]),
       st.sampled_from(["openai-responses", "openai-chat", "anthropic-messages"]))
def test_only_openai_s_own_responses_api_before_the_change_is_early(when: float, provider: str | None,
                                                                   dialect: str) -> None:
    expected = dialect == "openai-responses" and provider in (None, "openai") and when < RESPONSES_AS_TODAY
    assert early_responses(dialect, provider, when) is expected
    assert early_responses(dialect, provider, None) is False
