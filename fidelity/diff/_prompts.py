"""The two prompts of a comparison as the cache simulator sees them (the one
builder's, :func:`fidelity.cache.prompts.cache_prompt`), and the child's
predicted read (:meth:`_Prompts.read`): ``predicted cached`` in
:func:`fidelity.diff.compare` and in each partly fixed child of
:mod:`fidelity.diff.breaks` (:func:`predicted_read`).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from .. import cache as cache_models
from .. import tokens, wire
from ..cache.simulator import simulated
from ..wire import Segment
from .causes import params_members

__all__ = ["predicted_read"]


@dataclass
class _Prompts:
    """Both sides of a comparison as the cache simulator's prompts, and what
    the figures read from them."""

    tok: tokens.Tokenizer
    cm: Any
    p_prompt: cache_models.PromptTokens
    c_prompt: cache_models.PromptTokens
    same_key: bool
    shared: int
    levels: Any

    @property
    def p_len(self) -> int:
        return len(self.p_prompt.tokens)

    @property
    def c_len(self) -> int:
        return len(self.c_prompt.tokens)

    def read(self) -> tuple[int, int]:
        """The child's predicted cache read and write, the parent fed first
        when both share a cache partition: the one computation of the
        ``predicted cached`` figure (the headline's and each counterfactual's)."""
        outcome = simulated(self.cm, [self.p_prompt] if self.same_key else [], self.c_prompt)
        return outcome.cache_read or 0, outcome.cache_write or 0


def _prompts(d: wire.Dialect, model: str, parent: bytes, child: bytes, p_marked: Sequence[Segment],
             c_marked: Sequence[Segment], p_segs: Sequence[Segment], c_segs: Sequence[Segment],
             split: int | None, endpoint: str | None, key_changed: bool,
             times: tuple[float, float] | None = None) -> _Prompts:
    """The two prompts of a comparison. ``p_segs`` / ``c_segs``: the cache
    views as the cache keys them, markers removed for Anthropic;
    ``*_marked``: as sent; ``split``: the first differing segment of the
    unmarked views; ``times``: when each was sent, ``None``: the child one
    second after."""
    from ..cache.prompts import cache_prompt  # (remembered: one parent against many children)
    from ..tokens.billed import prompt_tokenizer

    tok = prompt_tokenizer(model, d.provider, d.name)
    t_p, t_c = times if times is not None else (0.0, 1.0)
    p_cp, c_cp = (cache_prompt(body, dialect=d.name, model=model, endpoint=endpoint) for body in (parent, child))
    # per-model minimums (Anthropic, Gemini); DashScope's explicit mode where the child marks a segment
    cm = cache_models.get(c_cp.cache_model, model)
    p_prompt, c_prompt = _tokens(p_cp.request, t_p), _tokens(c_cp.request, t_c)
    if d.provider == "anthropic":
        # the invalidation table folds the other settings into the prompts
        # (a tool_choice or thinking change keeps the tools and system)
        same_key = not key_changed and _params(p_segs).get("model") == _params(c_segs).get("model")
        shared = cache_models.common_prefix(p_prompt.tokens, c_prompt.tokens) if same_key else 0
        levels = (p_cp.levels, c_cp.levels)
    else:
        # The provider keys its cache by the params segment (model, OpenAI's
        # prompt_cache_key and reasoning settings...): a parent under another
        # key holds nothing this child can read.
        same_key = not key_changed and (split != 0 or not p_segs or p_segs[0].kind != "params")
        # tokens both prompts begin with (the priming too, where the child's next message starts with it)
        shared = 0 if key_changed or split == 0 else cache_models.common_prefix(p_prompt.tokens, c_prompt.tokens)
        levels = None
    return _Prompts(tok, cm, p_prompt, c_prompt, same_key, shared, levels)


def _tokens(req: Any, time: float) -> cache_models.PromptTokens:
    return cache_models.PromptTokens(req.tokens, time, req.breakpoints, req.ttls, req.blocks)


def predicted_read(d: wire.Dialect, model: str, parent: bytes, child: bytes, p_raw: Sequence[Segment],
                   c_raw: Sequence[Segment], endpoint: str | None = None,
                   times: tuple[float, float] | None = None) -> int:
    """The child's predicted cached tokens against the parent, from their
    cache views as sent: :func:`compare`'s ``predicted cached`` without the
    rest of the comparison."""
    p_segs, c_segs = (_unmarked(p_raw), _unmarked(c_raw)) if d.provider == "anthropic" else (p_raw, c_raw)
    split = _first_differing_segment(p_segs, c_segs)
    return _prompts(d, model, parent, child, p_raw, c_raw, p_segs, c_segs, split, endpoint, False, times).read()[0]


def _first_differing_segment(p: Sequence[Segment], c: Sequence[Segment]) -> int | None:
    """Index of the first segment that differs (``None``: identical views).
    When one view is a segment-prefix of the other, the shorter length."""
    for i, (a, b) in enumerate(zip(p, c)):
        if a.data != b.data or a.kind != b.kind:
            return i
    if len(p) == len(c):
        return None
    return min(len(p), len(c))


def _common_tokens(p_ids: Sequence[Sequence[int]], c_ids: Sequence[Sequence[int]],
                   split: int | None) -> int:
    if split is None:
        return sum(map(len, c_ids))
    if split == 0:  # the cache key (params) differs: no prefix is shared
        return 0
    common = sum(len(ids) for ids in c_ids[:split])
    if split < len(p_ids) and split < len(c_ids):
        common += cache_models.common_prefix(p_ids[split], c_ids[split])
    return common


def _params(segs: Sequence[Segment]) -> dict[str, Any]:
    """The params segment's members (empty when there is none or it does not parse)."""
    return params_members(segs[0].data) if segs and segs[0].kind == "params" else {}


def _unmarked(segs: Sequence[Segment]) -> list[Segment]:
    from ..cache.anthropic_blocks import strip_markers

    return [seg if b'"cache_control"' not in seg.data else
            Segment(seg.kind, seg.index, seg.pointer, strip_markers(seg.data), seg.text) for seg in segs]
