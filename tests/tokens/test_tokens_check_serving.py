"""Models served by others through an OpenAI-compatible API are reported under
their serving provider, not OpenAI: one classification (the URL's route in
:mod:`fidelity.providers`) that ``tokens-check``, ``replay`` and the scan share.

Modelled on pydantic/pydantic-ai recordings that ``tokens-check`` used to count
under "openai":

* tests/models/cassettes/test_groq/test_extra_headers.yaml (``llama-3.3-70b-versatile``
  on api.groq.com, ``hello``: billed 48);
* tests/models/cassettes/test_mistral/test_mistral_forwards_penalties.yaml
  (``mistral-large-latest`` on api.mistral.ai, ``hello``: billed 4);
* tests/models/cassettes/test_huggingface/test_max_completion_tokens.yaml
  (``deepseek-ai/DeepSeek-R1`` through router.huggingface.co/together/v1).
"""

from __future__ import annotations

from pathlib import Path

import orjson
import pytest
import yaml
from hypothesis import given
from hypothesis import strategies as st

from fidelity import providers
from fidelity.replay import replay_recording, summarize
from fidelity.tokens_check import check
from fidelity.traffic.apart import exchange
from fidelity.traffic.sources import read_all

_HELLO = [{"content": "hello", "role": "user"}]
CASES = [
    ("https://api.groq.com/openai/v1/chat/completions", "llama-3.3-70b-versatile", 48, "groq"),
    ("https://api.mistral.ai/v1/chat/completions", "mistral-large-latest", 4, "mistral"),
    ("https://router.huggingface.co/v1/chat/completions", "deepseek-ai/DeepSeek-R1", 4, "huggingface"),
]


def _cassette(tmp_path: Path, url: str, model: str, billed: int) -> Path:
    inter = {"request": {"method": "POST", "uri": url,
                         "body": orjson.dumps({"messages": _HELLO, "model": model, "stream": False}).decode()},
             "response": {"status": {"code": 200, "message": "OK"}, "headers": {"content-type": ["application/json"]},
                          "body": {"string": orjson.dumps({
                              "id": "c1", "object": "chat.completion", "created": 1744043573, "model": model,
                              "choices": [{"index": 0, "finish_reason": "stop",
                                           "message": {"role": "assistant", "content": "Hi!"}}],
                              "usage": {"prompt_tokens": billed, "completion_tokens": 3,
                                        "total_tokens": billed + 3}}).decode()}}}
    path = tmp_path / f"{model.replace('/', '_')}.yaml"
    path.write_text(yaml.safe_dump({"interactions": [inter], "version": 1}), encoding="utf-8")
    return path


@pytest.mark.parametrize("url, model, billed, provider", CASES)
def test_a_serving_provider_is_reported_under_its_own_name(tmp_path: Path, url: str, model: str, billed: int,
                                                          provider: str) -> None:
    path = _cassette(tmp_path, url, model, billed)
    result = check([path])
    assert [(r.provider, r.dialect, r.billed) for r in result.rows] == [(provider, "openai-chat", billed)]
    # no OpenAI tokenizer of its own: the nearest family's, marked an estimate
    assert result.rows[0].estimated
    assert [(g.provider, g.kind) for g in result.groups] == [(provider, "text")]
    # replay groups the same request under the same name
    (recording,) = read_all(path)
    rows = replay_recording(recording)
    assert {r.provider for r in rows} == {provider} and set(summarize(rows)) == {provider}


def test_openai_s_own_model_on_a_serving_provider_is_not_openai_s_figure(tmp_path: Path) -> None:
    """gpt-oss on Groq (pydantic-ai test_groq_prompted_output.yaml, billed 177): OpenAI's
    tokenizer, Groq's prompt: a groq row."""
    path = _cassette(tmp_path, CASES[0][0], "openai/gpt-oss-120b", 177)
    assert [(r.provider, r.estimated) for r in check([path]).rows] == [("groq", True)]
    # the one rule every command (tokens-check, replay, the scan's tokenizer note) asks
    from fidelity import tokens

    assert tokens.for_model("openai/gpt-oss-120b", "groq", nearest=True).estimated
    assert not tokens.for_model("gpt-oss-120b", "openai", nearest=True).estimated
    assert not tokens.for_model("openai/gpt-oss-120b", "groq").estimated  # the strict form names the vocabulary


def test_a_gateway_model_name_on_gemini_s_compatible_endpoint_stays_gemini() -> None:
    """``models/gemini-2.0-flash`` on Gemini's OpenAI-compatible endpoint: the URL
    says Gemini; the ``org/model`` guess for unplaced hosts does not apply."""
    from fidelity.tokens_check import _provider_of

    assert _provider_of("gemini", "openai-chat", "models/gemini-2.0-flash") == "gemini"
    assert _provider_of("openai", "openai-chat", "anthropic/claude-sonnet-4") == "openrouter"
    assert _provider_of("openai", "openai-chat", "openai/gpt-4o") == "openai"


_SERVING = ["groq", "mistral", "huggingface", "xai", "moonshot", "together", "fireworks", "cerebras", "deepinfra"]


@given(st.sampled_from(_SERVING), st.sampled_from(["hello", "what is 2+2?"]))
def test_every_serving_route_names_its_provider_and_the_chat_dialect(name: str, text: str) -> None:
    """Every route of a serving provider places the host: the exchange is that
    provider's, read as Chat Completions or Responses as its path says."""
    prov = providers.get(name)
    assert prov.cache_model == "openai" and prov.dialects == ()
    for route in prov.routes:
        url = f"https://{route.host}{route.path}"
        body = (orjson.dumps({"model": "m-1", "messages": [{"role": "user", "content": text}]})
                if route.dialect == "openai-chat" else orjson.dumps({"model": "m-1", "input": text}))
        ex = exchange("x", 0, body, url=url)
        assert (ex.dialect, ex.provider, ex.skip) == (route.dialect, name, None)
        assert providers.placed_url(url) == url
