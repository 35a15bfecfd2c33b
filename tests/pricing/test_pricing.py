"""The bundled price table and the LiteLLM loader."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from fidelity import pricing
from fidelity.errors import InputError, UnknownName

DATA = Path(__file__).parents[1] / "data"


def test_bundled_table_loads_with_name_and_date() -> None:
    table = pricing.load()
    assert table.name and table.as_of == "2026-11-30"
    assert len(table.prices) >= 20


def test_every_bundled_row_has_source_url_and_date() -> None:
    for p in pricing.load().prices:
        assert p.source.startswith("https://"), p
        assert len(p.as_of) == 10 and p.as_of[4] == "-", p
        assert p.input > 0 and p.output > 0
        assert p.cache_read is not None and p.cache_read <= p.input, p
        assert p.cache_write is not None and p.cache_write >= p.input, p


@pytest.mark.parametrize(
    "provider, model",
    [
        ("openai", "gpt-4o"), ("openai", "gpt-4.1"), ("openai", "gpt-5.2"),
        ("anthropic", "claude-sonnet-4-5"), ("anthropic", "claude-opus-4-5"), ("anthropic", "claude-haiku-4-5"),
        ("gemini", "gemini-2.5-pro"), ("gemini", "gemini-3-pro-preview"), ("gemini", "gemini-2.5-flash"),
        ("deepseek", "deepseek-v4-flash"), ("deepseek", "deepseek-v3.2"), ("deepseek", "deepseek-reasoner"),
        ("dashscope", "qwen3-max"), ("dashscope", "qwen-plus"), ("dashscope", "qwen-flash"),
    ],
)
def test_flagship_models_are_priced(provider: str, model: str) -> None:
    assert pricing.load().lookup(provider, model).model == model


def test_anthropic_write_and_read_multipliers_match_documented_ratios() -> None:
    for p in pricing.load().prices:
        if p.provider == "anthropic":
            assert p.cache_write == pytest.approx(1.25 * p.input)
            assert p.cache_read == pytest.approx(0.1 * p.input)


@pytest.mark.parametrize(
    "provider, model, expected",
    [
        ("openai", "gpt-4o-2024-08-06", "gpt-4o"),
        ("openai", "OpenAI/GPT-4o", "gpt-4o"),
        ("anthropic", "claude-sonnet-4-5-20250929", "claude-sonnet-4-5"),
        ("google", "gemini-2.5-pro-preview-06-05", "gemini-2.5-pro"),
        ("qwen", "qwen-plus-latest", "qwen-plus"),
        (None, "deepseek-v4-pro", "deepseek-v4-pro"),
    ],
)
def test_lookup_aliases(provider: str | None, model: str, expected: str) -> None:
    assert pricing.load().lookup(provider, model).model == expected


def test_variant_does_not_fall_back_to_base_model() -> None:
    with pytest.raises(UnknownName) as err:
        pricing.load().lookup("openai", "gpt-4.1-nano")
    assert "openai/gpt-4.1" in str(err.value)
    mini = pricing.load().lookup("openai", "gpt-4.1-mini-2025-04-14")  # its own row (158 of 568 real diffs had none)
    assert (mini.model, mini.input, mini.cache_read, mini.output) == ("gpt-4.1-mini", 0.40, 0.10, 1.60)


def test_unknown_provider_model_lists_known() -> None:
    with pytest.raises(UnknownName, match="known: .*claude"):
        pricing.load().lookup("anthropic", "claude-9")


def test_litellm_loader_converts_per_token_to_per_million() -> None:
    table = pricing.load(DATA / "litellm_prices.json")
    assert "litellm_prices.json" in table.name
    p = table.lookup("openai", "gpt-4o")
    assert (p.input, p.cache_read, p.cache_write, p.output) == (2.5, 1.25, None, 10.0)
    s = table.lookup("anthropic", "claude-sonnet-4-5-20250929")
    assert (s.cache_read, s.cache_write) == (0.3, 3.75)
    d = table.lookup("deepseek", "deepseek-chat")  # "deepseek/" prefix stripped
    assert d.input == 0.28 and d.cache_read == 0.028
    assert table.lookup("gemini", "gemini-2.5-pro").output == 10.0
    assert not any(p.model in ("sample_spec", "dall-e-3") for p in table.prices)


@pytest.mark.parametrize(
    "content, problem",
    [
        ("[1, 2]", "expected a JSON object"),
        ('{"m": 3}', "expected an object"),
        ('{"m": {"input_cost_per_token": "x", "output_cost_per_token": 1, "litellm_provider": "openai"}}', "expected a number"),
        ('{"m": {"input_cost_per_token": 1e-6, "output_cost_per_token": 1e-6}}', "missing litellm_provider"),
        ('{"m": {"mode": "image_generation"}}', "no model with"),
        ("{not json", "not valid JSON"),
    ],
)
def test_malformed_litellm_file_names_file_and_problem(tmp_path: Path, content: str, problem: str) -> None:
    path = tmp_path / "prices.json"
    path.write_text(content)
    with pytest.raises(InputError) as err:
        pricing.load(path)
    message = str(err.value)
    assert str(path) in message and problem in message
    assert "\n" not in message


def test_missing_file_is_input_error(tmp_path: Path) -> None:
    with pytest.raises(InputError, match="no such file"):
        pricing.load(tmp_path / "absent.json")


def test_bundled_file_key_order_is_kept() -> None:
    raw = json.loads((Path(pricing.__file__).parent / "data" / "prices.json").read_text())
    assert list(raw) == ["name", "as_of", "currency", "unit", "note", "models"]
