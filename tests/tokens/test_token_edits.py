"""Edited texts encoded around the change (fidelity/tokens/_edits.py) give
the ids of a whole encoding, on every tokenizer that does it."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from array import array
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from fidelity import tokens
from fidelity.scan import synthetic
from fidelity.tokens import _edits
from fidelity.tokens._bpe import O200K_PAT_STR, TiktokenTokenizer

REPO = Path(__file__).resolve().parents[2]

# the tokenizers that encode around edits (the estimates and the calibrated
# Claude tokenizer are not listed: the calibrated one wraps o200k_base's ids)
SAFE = ["o200k_base", "cl100k_base", "qwen3", "qwen3.6", "deepseek-v4"]

# what the patterns treat differently around a space: letters of each case
# class, marks, digits, apostrophes (contractions), punctuation, line ends,
# other spaces, CJK, emoji, and special-token strings
_ATOMS = ["a", "Z", "the", "build", " ", "  ", " x", "\n", "\r\n", "\t", "'s", "'LL", "don't", "1", "2024",
          "3.14", ".", ",", "...", "(", ")", "{\"k\": 1}", "/", "-", "_", "é", "ß", "Ä", "ǅ", "ʰ", "\u0301",
          "中文", "ひら", "カタ", "한", "٣", "😀", "\u200d", "\u00a0", "\u3000", "<|im_start|>", "<|endoftext|>",
          "<｜User｜>", "<think>", "Current time: 12:00:00.", "\ud800"]
pieces = st.lists(st.sampled_from(_ATOMS), min_size=0, max_size=60).map("".join)
# a few atoms only: the characters on both sides of an edit's ends are
# letters, spaces and their neighbours far more often
tight = st.lists(st.sampled_from(["a", "b", " ", "  ", " c", "d ", ".", "\n", "'s", "1"]), max_size=12).map("".join)


def _whole(tok: tokens.Tokenizer, text: str) -> list[int]:
    return tok._encode_array(text).tolist()


@pytest.mark.parametrize("name", SAFE)
def test_safe_tokenizers_encode_around_edits(name: str) -> None:
    assert tokens.get(name).edits is not None


@pytest.mark.parametrize("name", SAFE)
@settings(max_examples=200)
@given(text=pieces, picks=st.lists(st.integers(0, 10**6), max_size=6))
def test_ids_split_at_every_edit_boundary(name: str, text: str, picks: list[int]) -> None:
    tok = tokens.get(name)
    whole = _whole(tok, text)
    bounds = [0, *(m.start() for m in _edits._BOUNDARY.finditer(text)), len(text)]  # every edit boundary
    for pick in picks:
        i = bounds[pick % len(bounds)]
        assert text[i:i + 1] == " " and text[i - 1:i].isascii() and text[i - 1:i].isalpha() or i in (0, len(text))
        assert _whole(tok, text[:i]) + _whole(tok, text[i:]) == whole


def _check_edit(name: str, old: str, new: str) -> None:
    tok = tokens.get(name)
    recent = _edits.RecentTexts()
    enc = tok._encode_array
    assert recent.encode(old, enc).tolist() == _whole(tok, old)
    assert recent.encode(new, enc).tolist() == _whole(tok, new)


@pytest.mark.parametrize("name", SAFE)
@settings(max_examples=200)
@given(head=pieces, middle=pieces, tail=pieces, new_middle=pieces, filler=st.integers(0, 3))
def test_an_edited_text_gets_the_ids_of_a_whole_encoding(name: str, head: str, middle: str, tail: str,
                                                         new_middle: str, filler: int) -> None:
    pad = " ".join(["lorem ipsum dolor"] * (40 * filler))  # long shared parts, so that the edit path is taken
    _check_edit(name, head + pad + middle + pad + tail, head + pad + new_middle + pad + tail)


@pytest.mark.parametrize("name", SAFE)
@settings(max_examples=200)
@given(around=st.lists(tight, min_size=4, max_size=4), middle=tight, new_middle=tight)
def test_an_edit_next_to_spaces_and_letters_gets_the_ids_of_a_whole_encoding(
        name: str, around: list[str], middle: str, new_middle: str) -> None:
    pad = "lorem ipsum " * 60  # the edit path is taken; the edit's ends meet drawn neighbours
    a, b, c, d = around
    _check_edit(name, pad + a + b + middle + c + d + pad, pad + a + b + new_middle + c + d + pad)


@pytest.mark.parametrize("name", SAFE)
def test_a_timestamped_prompt_is_encoded_around_its_time(name: str) -> None:
    tok = tokens.get(name)
    body = " ".join(f"rule {i}: the agent reads the config and caches it." for i in range(200))
    seen: list[int] = []
    enc = tok._encode_array

    def counting(text: str) -> array[int]:
        seen.append(len(text))
        return enc(text)

    recent = _edits.RecentTexts()
    for minute in range(5):
        text = f"Current time: 12:{minute:02d}:00. {body}"
        assert recent.encode(text, counting).tolist() == _whole(tok, text)
    assert recent.edited == 4 and recent.whole == 1
    assert sum(seen[1:]) < 200  # the four edits encoded a few dozen characters each, not 10,000


@pytest.mark.parametrize("name", tokens.names())
def test_tokenizer_ids_after_an_edit_equal_a_whole_encoding(name: str) -> None:
    tok = tokens.get(name)
    body = " ".join(f"step {i} builds the cache and skips the network" for i in range(100))
    for edit in ("Current time: 09:00:00. ", "Current time: 09:00:01. ", "Date: today. "):
        text = edit + body + " The end."
        assert tok.ids(text).tolist() == tok._encode_chunk(text)
    tail_edit = body + " Last line changed."
    assert tok.ids(tail_edit).tolist() == tok._encode_chunk(tail_edit)


def test_unknown_patterns_and_spaced_special_tokens_are_encoded_whole() -> None:
    base = tokens.get("o200k_base")
    custom = TiktokenTokenizer("custom", source="test", load_ranks=lambda: base.encoding._mergeable_ranks,
                               pat_str=O200K_PAT_STR + r"|(?<=x)y", special_tokens={})
    assert custom.edits is None
    spaced = TiktokenTokenizer("spaced", source="test", load_ranks=lambda: base.encoding._mergeable_ranks,
                               pat_str=O200K_PAT_STR, special_tokens={"<|a b|>": 300000}, template_tokens=True)
    assert spaced.edits is None
    plain = TiktokenTokenizer("plain", source="test", load_ranks=lambda: base.encoding._mergeable_ranks,
                              pat_str=O200K_PAT_STR, special_tokens={"<|a b|>": 300000})
    assert plain.edits is not None  # its special tokens are ordinary text
    assert not _edits.boundaries_safe(["x", "<|a b|>"]) and _edits.boundaries_safe(["<|im_start|>", " a", "1 2"])


def test_short_texts_and_unrelated_texts_are_encoded_whole() -> None:
    tok = tokens.get("o200k_base")
    recent = _edits.RecentTexts()
    a = " ".join(["alpha beta"] * 100)
    b = " ".join(["gamma delta"] * 100)
    recent.encode(a, tok._encode_array)
    assert recent.encode(b, tok._encode_array).tolist() == _whole(tok, b)
    assert recent.edited == 0 and recent.whole == 2
    # shared head and tail too short for the edit to pay: whole
    c = b[:20] + " ".join(["epsilon zeta"] * 100) + b[-20:]
    assert recent.encode(c, tok._encode_array).tolist() == _whole(tok, c)
    assert recent.edited == 0 and recent.whole == 3
    # a long shared tail: edited
    d = "Changed start. " + b[40:]
    assert recent.encode(d, tok._encode_array).tolist() == _whole(tok, d)
    assert recent.edited == 1 and recent.whole == 3


def _scan_both(paths: list[Path]) -> dict[str, object]:
    """``fidelity scan --json`` with edits on and off: the same bytes."""
    outs = []
    for edits in ("1", "0"):
        env = {**os.environ, "PYTHONPATH": str(REPO), "FIDELITY_TOKEN_EDITS": edits}
        proc = subprocess.run([sys.executable, "-m", "fidelity", "scan", *map(str, paths), "--json", "--workers", "1"],
                              capture_output=True, env=env, timeout=300)
        assert proc.returncode == 0, proc.stderr.decode()
        outs.append(proc.stdout)
    assert outs[0] == outs[1]
    return json.loads(outs[0])  # type: ignore[no-any-return]


def test_scan_json_is_the_same_with_edits_off(tmp_path: Path) -> None:
    # long system prompts, some of them starting with the time of day
    log = tmp_path / "log.jsonl"
    synthetic.write_log(str(log), 3_000_000, seed=3, system_words=(1500, 3000))
    assert log.read_bytes().count(b"Current time: ") >= 20
    assert _scan_both([log])["totals"]["breaks"] > 0  # type: ignore[index]


def test_scan_json_is_the_same_with_edits_off_on_recordings(shared_real: Path) -> None:
    doc = _scan_both([shared_real / "recorded-usage", shared_real / "cassettes"])
    assert doc["totals"]["requests"] >= 200  # type: ignore[index]


def test_edits_can_be_turned_off(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("FIDELITY_TOKEN_EDITS", "0")
    tok = TiktokenTokenizer("off", source="test", load_ranks=lambda: tokens.get("o200k_base").encoding._mergeable_ranks,
                            pat_str=O200K_PAT_STR, special_tokens={})
    assert tok.edits is None
