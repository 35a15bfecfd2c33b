"""scripts/heldout.py: the split by source repository, distinct requests, determinism;
and fidelity.tokens.for_model(..., nearest=True) for models whose vocabulary is unknown."""

from __future__ import annotations

import importlib.util
import json
import sys
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from fidelity import tokens
from fidelity.errors import UnknownName

ROOT = Path(__file__).resolve().parents[1]
CORPUS = Path("/work/corpus")


def _load():
    spec = importlib.util.spec_from_file_location("heldout_script", ROOT / "scripts" / "heldout.py")
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    sys.modules["heldout_script"] = mod
    spec.loader.exec_module(mod)
    return mod


heldout = _load()


def _cassette(path: Path, requests: list[tuple[str, str, int]]) -> None:
    """A vcrpy cassette (JSON is YAML) of OpenAI chat requests: (model, user text, billed prompt)."""
    inter = []
    for model, text, billed in requests:
        body = json.dumps({"model": model, "messages": [{"role": "user", "content": text}]})
        resp = json.dumps({"id": "x", "object": "chat.completion", "model": model,
                           "choices": [{"index": 0, "message": {"role": "assistant", "content": "ok"},
                                        "finish_reason": "stop"}],
                           "usage": {"prompt_tokens": billed, "completion_tokens": 1, "total_tokens": billed + 1,
                                     "prompt_tokens_details": {"cached_tokens": 0}}})
        inter.append({"request": {"method": "POST", "uri": "https://api.openai.com/v1/chat/completions",
                                  "body": body, "headers": {"content-type": ["application/json"]}},
                      "response": {"status": {"code": 200, "message": "OK"},
                                   "headers": {"content-type": ["application/json"]},
                                   "body": {"string": resp}}})
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps({"interactions": inter, "version": 1}))


@pytest.fixture()
def corpus(tmp_path: Path) -> Path:
    root = tmp_path / "corpus"
    same = [("gpt-4o-mini", "What is the capital of France?", 14)]
    # one test replayed in three cassettes: one distinct request
    for i in range(3):
        _cassette(root / "alpha__one" / "tests" / "cassettes" / f"t{i}.yaml", same)
    _cassette(root / "beta__two" / "cassettes" / "b.yaml",
              [("gpt-4o-mini", "Name three primes.", 11), ("gpt-4o-mini", "Name four primes.", 40)])
    return root


def test_split_puts_each_repository_in_one_set(corpus: Path) -> None:
    dirs = heldout.repo_dirs(corpus)
    assert sorted(dirs) == ["alpha/one", "beta/two"]
    fit, held = heldout.split(dirs, ["ALPHA/one"])
    assert fit == ("alpha/one",) and held == ("beta/two",)
    assert not set(fit) & set(held)


def test_identical_requests_count_once(corpus: Path) -> None:
    cols = heldout.run(corpus, ["alpha/one"], None)
    fit, held = cols["fit"], cols["held out"]
    assert (fit.requests, fit.distinct, fit.with_usage, fit.scored) == (3, 1, 1, 1)
    assert (held.requests, held.distinct, held.with_usage, held.scored) == (2, 2, 2, 2)
    n, median, p95 = fit.tokens[("openai", "text")]
    assert n == 1 and median == p95
    # the held-out pair: one of the two billed figures is far off, so p95 is the larger error
    n, median, p95 = held.tokens[("openai", "text")]
    assert n == 2 and p95 > 0.5 and median <= p95
    assert held.detected == held.generation == 2


def test_markdown_is_deterministic_and_names_the_split(corpus: Path) -> None:
    a = heldout.render(heldout.run(corpus, ["alpha/one"], None), command="c", date="2026-01-01")
    b = heldout.render(heldout.run(corpus, ["alpha/one"], None), command="c", date="2026-01-01")
    assert a == b
    assert "| figure | fit | held out |" in a
    assert "- fit: alpha/one" in a and "- held out: beta/two" in a
    assert "3 / 1" in a  # requests / distinct of the fit set


def test_main_writes_the_file_and_refuses_a_missing_corpus(corpus: Path, tmp_path: Path, capsys) -> None:
    out = tmp_path / "out" / "heldout.md"
    assert heldout.main([str(corpus), "--split", "fit=beta/two", "--no-real", "--out", str(out),
                         "--date", "2026-01-01"]) == 0
    assert "- fit: beta/two" in out.read_text()
    assert heldout.main([str(tmp_path / "nowhere"), "--no-real"]) == 2
    err = capsys.readouterr().err
    assert "nowhere" in err and "Traceback" not in err and len(err.strip().splitlines()) == 1


@pytest.mark.skipif(not CORPUS.is_dir(), reason="the development corpus (/work/corpus) is not on this machine")
def test_development_corpus_figures() -> None:
    dirs = heldout.repo_dirs(CORPUS)
    fit, held = heldout.split(dirs, heldout.FIT)
    assert fit and held and not set(fit) & set(held)
    fig = heldout.measure({n: dirs[n] for n in held})
    assert fig.unreadable <= fig.files
    assert fig.distinct <= fig.requests and fig.with_usage <= fig.generation
    assert fig.detected <= fig.generation and fig.scored <= fig.with_usage


# -- for_model(..., nearest=True): modelled on real gateway bodies (OpenRouter's z-ai/glm-4.6,
#    Groq's llama-3.3-70b-versatile, Bedrock's us.anthropic.claude-opus-4-8 in pydantic-ai's cassettes)


def test_unknown_model_stays_an_error_without_nearest() -> None:
    with pytest.raises(UnknownName):
        tokens.for_model("z-ai/glm-4.6")


def test_unknown_model_gets_the_nearest_tokenizer_marked_estimated() -> None:
    tok = tokens.for_model("z-ai/glm-4.6", nearest=True)
    assert tok.estimated and tok.name == "o200k_base~nearest"
    text = "Summarise the previous conversation in one line."
    assert tok.encode(text) == tokens.get("o200k_base").encode(text)
    assert tok.count(text) == tokens.get("o200k_base").count(text)
    assert tokens.for_model("llama-3.3-70b-versatile", "openai", nearest=True) is tok


def test_a_family_after_a_region_prefix_is_found() -> None:
    assert tokens.for_model("us.anthropic.claude-opus-4-8", nearest=True).name == "claude-estimate"
    assert tokens.for_model("anthropic.claude-3-5-sonnet-20240620-v1:0", nearest=True).name == "claude-estimate"


def test_provider_fallback_unchanged_without_nearest() -> None:
    tok = tokens.for_model("mistral-large-latest", "openai")
    assert tok.name == "o200k_base" and not tok.estimated
    assert tokens.for_model("mistral-large-latest", "openai", nearest=True).estimated


@settings(max_examples=200, deadline=None)
@given(st.text(min_size=1, max_size=40), st.sampled_from([None, "openai", "anthropic", "gemini", "deepseek"]))
def test_nearest_never_raises_and_agrees_where_the_name_resolves(model: str, provider: str | None) -> None:
    near = tokens.for_model(model, provider, nearest=True)
    try:
        strict = tokens.for_model(model, provider)
    except UnknownName:
        assert near.estimated
        return
    assert near is strict or (near.estimated and near.encode("abc def") == strict.encode("abc def"))
