"""Provider descriptors: one place per provider, and adding one is one module
plus a price row (issue 17's acceptance test)."""

from __future__ import annotations

import dataclasses

import pytest

from fidelity import cache, pricing, providers, tokens, wire
from fidelity.capture import snapshot
from fidelity.diff import compare
from fidelity.errors import UnknownName
from fidelity.wire.openai_chat import ChatDialect

# --- what "one module" holds for a new OpenAI-compatible provider ----------
ACME = providers.Provider(
    name="acme", title="Acme AI", dialects=("acme-chat",), aliases=("acme-ai",),
    routes=(providers.Route("api.acme.example", "acme-chat"),),
    tokenizer="cl100k_base", cache_model="openai", price_key="acme",
)
ACME_CHAT = ChatDialect(name="acme-chat", provider="acme", priority=-1)
# --- and the price row -----------------------------------------------------
ACME_PRICE = pricing.Price(provider="acme", model="acme-large", input=2.0, cache_read=0.5, cache_write=None,
                           output=8.0, source="https://acme.example/pricing", as_of="2026-11-30")


@pytest.fixture
def acme():
    providers.register(ACME)
    wire.register(ACME_CHAT)
    base = pricing.load()
    yield dataclasses.replace(base, prices=base.prices + (ACME_PRICE,))
    wire.unregister("acme-chat")
    providers.unregister("acme")


def _body(text: str, head: str = "") -> bytes:
    return (b'{"messages":[{"role":"system","content":"' + head.encode() + b"You are terse. " * 400
            + b'"},{"role":"user","content":"' + text.encode() + b'"}],"model":"acme-large"}')


def test_a_new_provider_is_picked_up_everywhere(acme) -> None:
    # detection and snapshot routing by URL
    assert providers.from_url("https://api.acme.example/v1/chat/completions") == providers.Endpoint(
        "acme", "acme-chat", "host api.acme.example")
    dialect, family, model = snapshot.describe("https://api.acme.example/v1/chat/completions", _body("hi"))
    assert (dialect, family, model) == ("acme-chat", "acme", "acme-large")
    # aliases, tokens and cache model from the descriptor
    assert providers.family("acme-ai") == "acme"
    assert tokens.for_model("acme-large", "acme").name == "cl100k_base"
    assert type(cache.for_provider("acme")).__name__ == "OpenAICache"
    # cost from the price row, through the differ
    same = compare(_body("first question"), _body("second question"), dialect="acme-chat", prices=acme)
    # a model no rule names is counted with the provider's fallback, marked an
    # estimate, by diff as by replay and tokens-check (issue 31)
    assert same.provider == "acme" and same.tokens.tokenizer == tokens.for_model(
        "acme-large", "acme", nearest=True).name == "cl100k_base~nearest"
    assert same.cache.predicted_cached >= 1024 and same.cache.lost == 0  # OpenAI rules: 1,024 then 128-token steps
    broken = compare(_body("q"), _body("q", head="Today is Monday. "), dialect="acme-chat", prices=acme)
    assert broken.cache.predicted_cached == 0 and broken.cache.lost >= 1024
    assert broken.cost is not None and broken.cost.price_model == "acme-large"
    assert broken.cost.usd_lost == pytest.approx(broken.cache.lost * (2.0 - 0.5) / 1e6)


def test_unknown_provider_lists_the_known_ones() -> None:
    with pytest.raises(UnknownName) as err:
        providers.get("nope")
    assert "openai" in str(err.value) and "anthropic" in str(err.value)


def test_every_dialect_has_exactly_one_provider() -> None:
    for name in wire.names():
        desc = providers.for_dialect(name)
        assert name in desc.dialects
        assert wire.get(name).provider == desc.name


def test_routes_name_the_provider_their_url_names() -> None:
    cases = {
        "https://api.openai.com/v1/chat/completions": ("openai", "openai-chat"),
        "https://api.openai.com/v1/responses": ("openai", "openai-responses"),
        "https://x.openai.azure.com/openai/deployments/d/chat/completions": ("openai", "openai-chat"),
        "https://api.anthropic.com/v1/messages": ("anthropic", "anthropic-messages"),
        "https://api.deepseek.com/anthropic/v1/messages": ("deepseek", "anthropic-messages"),
        "https://api.deepseek.com/chat/completions": ("deepseek", "deepseek"),
        "https://generativelanguage.googleapis.com/v1beta/models/gemini-2.5-pro:generateContent": ("gemini", "gemini"),
        "https://dashscope.aliyuncs.com/compatible-mode/v1/chat/completions": ("dashscope", "dashscope"),
    }
    for url, (prov, dialect) in cases.items():
        found = providers.from_url(url)
        assert found is not None and (found.provider, found.dialect) == (prov, dialect), url
    assert providers.from_url("http://127.0.0.1:8000/v1/chat/completions") is None
    assert providers.from_url("not a url") is None


def test_family_resolves_aliases_and_harness_ids() -> None:
    assert providers.family("vertex_ai") == "gemini"
    assert providers.family("deepseek-official") == "deepseek"
    assert providers.family("llamacpp") == "llama.cpp"
    with pytest.raises(UnknownName):
        providers.family("nobody")


def test_report_setups_cover_every_scored_dialect() -> None:
    dialects = [s.dialect for s in providers.report_setups()]
    assert len(dialects) == len(set(dialects)) == 8
    assert set(dialects) == set(wire.names())
