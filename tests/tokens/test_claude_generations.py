"""The Claude estimate per tokenizer generation (fidelity.tokens.calibrated,
framing_estimate.table_of): the rank-stretched ids, the frame refitted with
them, and the table of the Opus 4.7 tokenizer and later. Bodies are small
hand-made copies of public recordings, each billed count the recording's."""

from __future__ import annotations

import math
from array import array

import orjson
from hypothesis import given
from hypothesis import strategies as st

from fidelity import tokens
from fidelity.tokens import fit as F
from fidelity.tokens.billed import billing_tokenizer
from fidelity.tokens.calibrated import ScaledTokenizer
from fidelity.tokens.framing_estimate import claude_version, table_of
from fidelity.tokens_check import count_prompt


def _count(body: dict[str, object]) -> int:
    return count_prompt(orjson.dumps(body), dialect="anthropic-messages").tokens


def test_one_user_message_is_its_text_and_seven() -> None:
    """Claude 3 to Opus 4.6 bill one user message as its text plus 7 (4 a
    request, 3 a turn). Before, 2 + 4 = 6 and every text of 8 o200k tokens
    or more stretched by 1.142: a short prompt came out one token under."""
    # alexrudall/anthropic spec/fixtures/cassettes/claude-3-haiku-20240307_messages_how_high_is_the_sky_.yml: 13
    assert _count({"model": "claude-3-haiku-20240307",
                   "messages": [{"role": "user", "content": "How high is the sky?"}], "max_tokens": 5}) == 13
    # pydantic/pydantic-ai tests/models/cassettes/test_anthropic/test_extra_headers.yaml: 8
    assert _count({"max_tokens": 4096, "messages": [{"content": [{"text": "hello", "type": "text"}], "role": "user"}],
                   "metadata": {"user_id": "123"}, "model": "claude-haiku-4-5", "stream": False}) == 8


def test_opus_4_8_has_its_own_tokenizer_table() -> None:
    """Opus 4.8 reads with the tokenizer introduced by Opus 4.7: the same
    text bills about 1.4 times what Claude 4.6 bills, most of it in rarer
    words. With Claude 4.6's factor the request below counted 58."""
    # pydantic/pydantic-ai tests/models/cassettes/test_anthropic_mid_conversation_system/
    # test_mid_conversation_system_prompt_takes_cache_breakpoint.yaml, interaction 0: 68
    body = {"max_tokens": 4096, "messages": [
        {"content": [{"text": "Review `def add(a, b): return a + b`.", "type": "text"}], "role": "user"},
        {"content": [{"text": "Looks fine.", "type": "text"}], "role": "assistant"},
        {"content": [{"text": "Review it again.", "type": "text"}], "role": "user"},
        {"content": [{"cache_control": {"ttl": "5m", "type": "ephemeral"},
                      "text": "From now on, every suggestion must include explicit type annotations.", "type": "text"}],
         "role": "system"}], "model": "claude-opus-4-8", "stream": False, "system": "You are a code reviewer."}
    assert _count(body) == 68
    got = count_prompt(orjson.dumps(body), dialect="anthropic-messages")
    assert got.tokenizer == "claude-calibrated-4.7" and got.estimated


def test_generation_of_a_model_id() -> None:
    assert claude_version("anthropic/claude-opus-4.7") == (4, 7)  # OpenRouter's dotted ids
    assert claude_version("claude-sonnet-4-20250514") == (4, 0)
    assert table_of("anthropic", "claude-opus-4-7") == "anthropic-4.7"
    assert table_of("anthropic", "us.anthropic.claude-opus-4-8") == "anthropic-4.7"
    assert table_of("anthropic", "claude-sonnet-5") == "anthropic-4.7"
    assert table_of("anthropic", "claude-opus-4-6") == "anthropic"
    assert table_of("anthropic", "claude-3-5-haiku-latest") == "anthropic"
    assert table_of("anthropic", "claude-next") == "anthropic"  # no version: the earlier table
    assert table_of("gemini", "gemini-3-pro") == "gemini"
    plain = tokens.for_model("claude-opus-4-8", "anthropic")
    assert billing_tokenizer(plain, "claude-opus-4-8").name == "claude-calibrated-4.7"
    assert billing_tokenizer(plain, "claude-sonnet-4-5").name == "claude-calibrated"
    assert billing_tokenizer(plain).name == "claude-calibrated"


_TEXT = st.lists(st.sampled_from(["the", " cat", " specializes", " calculations", "\n", "{\"k\":", "12345", "ü",
                                  "日本", "_x", " Tokyo", "."]), max_size=60).map("".join)


@given(a=_TEXT, b=_TEXT, rank=st.sampled_from([0, 1_000, 30_000, 100_000]), factor=st.floats(1.0, 6.0))
def test_rank_stretch_rule_and_prefix(a: str, b: str, rank: int, factor: float) -> None:
    """Base ids under the rank give one id; the j-th at or above it gives
    floor((j+1)f) - floor(jf) ids (its own, then plus m * 2**40); where the
    base ids of ``a`` start those of ``a + b``, so do the stretched ones."""
    tok = ScaledTokenizer("t", "o200k_base", factor, rank=rank, source="test")
    base = tokens.get("o200k_base").ids(a)
    want = array("q")
    j = 0
    for t in base:
        want.append(t)
        if t >= rank:
            want.extend(t + m * (1 << 40) for m in range(1, math.floor((j + 1) * factor) - math.floor(j * factor)))
            j += 1
    assert tok.ids(a) == want
    whole = tokens.get("o200k_base").ids(a + b)
    if whole[:len(base)] == base:
        assert tok.ids(a + b)[:len(want)] == want


def _sample(group: str, proxy: int, late: tuple[int, ...], billed: int) -> F.Sample:
    return F.Sample("anthropic", group, "claude-sonnet-4-5", billed, messages=0, tools=0,
                    thinking=0, base=0, fixed=0, proxy=proxy, late=late)


@given(at=st.integers(1, len(F.RANKS) - 1), factor=st.floats(1.5, 3.0),
       texts=st.lists(st.tuples(st.integers(100, 4_000), st.floats(0.1, 0.4)), min_size=8, max_size=20,
                      unique_by=(lambda t: t[0], lambda t: round(t[1], 2))))
def test_fit_finds_the_rank(at: int, factor: float, texts: list[tuple[int, float]]) -> None:
    """Samples billed their base tokens, with the ones at or above one
    rank of :data:`fit.RANKS` each billed ``factor`` times: the fit returns
    that rank and factor (the other ranks' counts of such tokens are drawn at
    random, at most half or at least half again as many, so no other rank
    explains the bills; the texts differ in length
    and in their share of such tokens, else rank 0 with a smaller factor
    explains them as well)."""
    import random

    rng = random.Random(at * 1_000 + len(texts))
    data = []
    for i, (n, share) in enumerate(texts):
        k = round(n * share)
        above = sorted((k + rng.randint((n - k) // 2, n - k) for _ in range(at - 1)), reverse=True)
        below = sorted((rng.randint(0, k // 2) for _ in range(len(F.RANKS) - at - 1)), reverse=True)
        late = (n, *above, k, *below)
        billed = (n - k) + math.floor(k * factor)
        data.append(_sample(f"t{i}", n, late, billed))
    c = F.fit(data, F.RANKS)
    assert c["rank"] == F.RANKS[at]
    assert abs(c["factor"] - factor) < 0.02
