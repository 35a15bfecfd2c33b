"""Prices by time of day and prompt length, LiteLLM's edge cases, the one
cost function ("unknown", never 0, never a TypeError) and the dated table of
minimum cacheable prompt lengths as the cache models and the differ use it."""

from __future__ import annotations

import datetime as dt
import json
from pathlib import Path

import pytest

from fidelity import cache, pricing
from fidelity.cli import main
from fidelity.diff import compare

DATA = Path(__file__).parents[1] / "data"
UTC = dt.UTC


def test_deepseek_v4_prices_peak_and_off_peak() -> None:
    t = pricing.load()
    flash = t.lookup("deepseek", "deepseek-v4-flash")
    assert (flash.input, flash.output, flash.cache_read) == (0.30, 1.20, 0.006)  # peak: the row's own rates
    # 10:00 Beijing (02:00 UTC) is in a peak window, 20:00 Beijing (12:00 UTC) is not
    assert flash.rates(at=dt.datetime(2026, 12, 1, 2, 0, tzinfo=UTC)) == pricing.Rates(0.30, 0.006, 0.30, 1.20)
    assert flash.rates(at=dt.datetime(2026, 12, 1, 12, 0, tzinfo=UTC)) == pricing.Rates(0.15, 0.003, 0.15, 0.60)
    beijing = dt.timezone(dt.timedelta(hours=8))
    assert flash.is_peak(dt.datetime(2026, 12, 1, 15, 30, tzinfo=beijing))
    assert not flash.is_peak(dt.datetime(2026, 12, 1, 13, 0, tzinfo=beijing))
    pro = t.lookup("deepseek", "deepseek-v4-pro")
    assert (pro.input, pro.output, pro.cache_read) == (1.32, 3.96, 0.044)
    # the cost function takes the time; without one, the peak rate (the higher)
    peak = pricing.lost_cost(flash, 1_000_000)
    off = pricing.lost_cost(flash, 1_000_000, at=dt.datetime(2026, 12, 1, 12, 0, tzinfo=UTC))
    assert peak == pytest.approx(0.294) and off == pytest.approx(0.147)


def test_bad_time_of_day_rows_are_input_errors() -> None:
    row = {"provider": "x", "model": "m", "input": 1, "output": 1, "source": "https://x", "as_of": "2026-01-01"}
    doc = {"name": "t", "as_of": "2026-01-01", "models": [{**row, "off_peak": {"input": 1, "output": 1},
                                                            "peak_hours_utc": ["25:00-26:00"]}]}
    with pytest.raises(pricing.InputError, match="HH:MM-HH:MM"):
        pricing.parse_bundled(doc)
    with pytest.raises(pricing.InputError, match="go together"):
        pricing.parse_bundled({**doc, "models": [{**row, "off_peak": {"input": 1, "output": 1}}]})


def test_litellm_exact_provider_first_tiers_and_not_given() -> None:
    t = pricing.load(DATA / "litellm_edge_prices.json")
    gpt = t.lookup("openai", "openai/gpt-4o")
    assert gpt.key == "gpt-4o" and gpt.input == 2.5  # not the azure/eu/ row listed first
    assert gpt.cache_write is None  # 0.0 in LiteLLM: not given, so the input price applies, not "free"
    assert t.lookup("openai", "azure/eu/gpt-4o").input == 2.75  # asked for by its full name
    assert pricing.prompt_cost(gpt, cached=0, written=1_000_000, uncached=1_000_000) == pytest.approx(2.5)
    qmax = t.lookup("dashscope", "qwen3-max")
    assert (qmax.input, qmax.output) == (1.2, 6.0)  # the first tier is the flat price
    assert qmax.rates(prompt_tokens=32_000).input == 1.2
    assert qmax.rates(prompt_tokens=32_001).input == 2.4
    assert qmax.rates(prompt_tokens=200_000).cache_read == 0.6
    assert pricing.prompt_cost(qmax, cached=0, written=0, uncached=100_000) == pytest.approx(0.24)
    flash = t.lookup("dashscope", "qwen-flash")
    assert flash.rates(prompt_tokens=300_000).input == 0.25
    assert flash.cache_read is None


def test_missing_cache_read_price_is_unknown_not_zero_nor_a_crash(tmp_path: Path) -> None:
    t = pricing.load(DATA / "litellm_edge_prices.json")
    mini = t.lookup("openai", "gpt-4.1-mini")
    assert mini.cache_read is None
    assert pricing.lost_cost(mini, 5000) is None
    assert pricing.prompt_cost(mini, cached=100, written=0, uncached=10) is None
    assert pricing.prompt_cost(mini, cached=0, written=0, uncached=1_000_000) == pytest.approx(0.4)
    assert pricing.lost_cost(None, 5) is None and pricing.prompt_cost(None, cached=0, written=0, uncached=1) is None
    sys_text = "You are a careful coding agent. " * 400
    parent = {"model": "gpt-4.1-mini", "messages": [{"role": "system", "content": sys_text},
                                                    {"role": "user", "content": "hi"}]}
    child = {**parent, "tools": [{"type": "function", "function": {"name": "report", "parameters": {}}}]}
    p, c = tmp_path / "p.json", tmp_path / "c.json"
    p.write_text(json.dumps(parent))
    c.write_text(json.dumps(child))
    result = compare(p.read_bytes(), c.read_bytes(), prices=t)
    assert result.cache.lost > 0 and result.cost is None and "no cache-read price" in (result.cost_note or "")
    assert main(["diff", str(p), str(c), "--prices", str(DATA / "litellm_edge_prices.json"), "--json"]) == 0


def test_diff_and_score_cost_through_the_one_function() -> None:
    from fidelity import compose, fixtures, score

    fx = fixtures.load(None)
    variants = [v for v in compose.load_variants_from_bytes(fx.compositions) if v.name == "continuable-fork"]
    s = score.score(fx, variants, providers=["deepseek"])
    table = pricing.load()
    price = table.lookup("deepseek", "deepseek-v4-flash")
    for r in s.rows:
        want = pricing.prompt_cost(price, cached=r.reused, written=r.written, uncached=r.child_prompt - r.reused)
        assert r.cost is not None and r.cost.per_child == pytest.approx(want)


def test_dated_minimums_table() -> None:
    m = cache.minimums
    assert m.minimum("anthropic", "claude-sonnet-4-6") == 1024
    assert m.minimum("anthropic", "claude-sonnet-4-6", on="2026-05-14") == 2048
    assert m.row("anthropic", "claude-sonnet-4-6").as_of == "2026-05-15"
    assert m.minimum("anthropic", "claude-opus-4-7") == 4096
    assert m.minimum("anthropic", "claude-haiku-4-5-20251001") == 4096
    assert m.minimum("gemini", "gemini-2.5-pro") == 2048 and m.minimum("gemini", "gemini-2.5-pro", on="2026-05-31") == 4096
    assert m.minimum("gemini", "gemini-3.1-pro-preview") == 4096
    assert m.minimum("openai", "gpt-4o", default=1024) == 1024
    for r in m.rows():
        assert r.source.startswith("https://") and dt.date.fromisoformat(r.as_of)


def test_diff_gives_the_cache_model_the_bodys_model() -> None:
    """The differ takes the minimum for the model it is given: a 3,000-token
    shared prefix is cached for Sonnet 4.6 (1,024) and not for Opus 4.7 (4,096)."""
    def body(model: str, extra: str) -> bytes:
        return json.dumps({"model": model, "max_tokens": 16, "system": [
            {"type": "text", "text": "word " * 2800, "cache_control": {"type": "ephemeral"}}],
            "messages": [{"role": "user", "content": extra}]}).encode()

    sonnet = compare(body("claude-sonnet-4-6", "a"), body("claude-sonnet-4-6", "b"))
    opus = compare(body("claude-opus-4-7", "a"), body("claude-opus-4-7", "b"))
    assert sonnet.cache.predicted_cached > 2000
    assert opus.cache.predicted_cached == 0


def test_a_dotted_version_is_another_model_not_a_price_neutral_tail() -> None:
    import pytest

    from fidelity import pricing
    from fidelity.errors import UnknownName

    table = pricing.load()
    assert table.lookup("openai", "gpt-5-2025-08-07").model == "gpt-5"
    with pytest.raises(UnknownName):
        table.lookup("openai", "gpt-5.5")
