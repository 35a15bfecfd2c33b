"""The two prompts of a comparison, as the cache simulator sees them, and
the child's predicted read: what :func:`fidelity.diff.compare` reports as
``predicted cached`` and each partly fixed child of :mod:`fidelity.diff.breaks`
keeps (:func:`predicted_read`), computed by one function (:meth:`_Prompts.read`).
Billed ids come from :func:`fidelity.cache.prompts.view_ids` (one memo with
the simulator's prompts), Anthropic prompts from
:func:`fidelity.cache.prompts.cache_prompt`.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from .. import cache as cache_models
from .. import jsonio, tokens, wire
from ..cache.prompts import view_ids
from ..cache.simulator import simulated
from ..errors import InputError
from ..wire import Segment

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
    """The two prompts of a comparison (``p_segs`` / ``c_segs``: the cache
    views as the cache keys them, markers removed for Anthropic; ``*_marked``:
    as sent; ``split``: the first differing segment of the unmarked views;
    ``times``: when each was sent, ``None``: the child one second after)."""
    from ..tokens.billed import billing_tokenizer

    tok = billing_tokenizer(tokens.for_model(model, d.provider), d.name)
    p_ids = view_ids(d, p_segs, model, tok)
    c_ids = view_ids(d, c_segs, model, tok)
    cm = cache_models.for_provider(d.provider, model)  # per-model minimums (Anthropic, Gemini)
    t_p, t_c = times if times is not None else (0.0, 1.0)
    if d.provider == "anthropic":
        # the cache simulator's own Anthropic prompts: markers removed,
        # content blocks for the lookback, and the invalidation table folded
        # in (a tool_choice or thinking change keeps the tools and system)
        p_prompt, c_prompt, same_key = _anthropic_prompts(d, model, parent, child, p_segs, c_segs,
                                                          endpoint, key_changed, t_p, t_c)
        shared = cache_models.common_prefix(p_prompt.tokens, c_prompt.tokens) if same_key else 0
        from ..cache.prompts import anthropic_level_starts

        levels = (anthropic_level_starts(p_segs, p_ids, model), anthropic_level_starts(c_segs, c_ids, model))
    else:
        # The provider keys its cache by the params segment (model, OpenAI's
        # prompt_cache_key and reasoning settings...): a parent under another
        # key holds nothing this child can read.
        same_key = not key_changed and (split != 0 or not p_segs or p_segs[0].kind != "params")
        # the prompt the simulator's one builder assembles (replay's and
        # scan's): the segments' ids, then the reply priming the provider appends
        from ..cache.prompts import generic_request
        from ..tokens.billed import prompt_tail

        tail = prompt_tail(tok, d.name, model=model)
        p_prompt = cache_models.PromptTokens(generic_request([s.kind for s in p_segs], p_ids, tail, t_p, None).tokens,
                                             t_p, _breakpoints(p_marked, p_ids))
        c_prompt = cache_models.PromptTokens(generic_request([s.kind for s in c_segs], c_ids, tail, t_c, None).tokens,
                                             t_c, _breakpoints(c_marked, c_ids))
        # tokens both prompts begin with (the priming too, where the child's next message starts with it)
        shared = 0 if key_changed or split == 0 else cache_models.common_prefix(p_prompt.tokens, c_prompt.tokens)
        levels = None
    return _Prompts(tok, cm, p_prompt, c_prompt, same_key, shared, levels)


def predicted_read(d: wire.Dialect, model: str, parent: bytes, child: bytes, p_raw: Sequence[Segment],
                   c_raw: Sequence[Segment], endpoint: str | None = None,
                   times: tuple[float, float] | None = None) -> int:
    """The child's predicted cached tokens against the parent, from their
    cache views as sent (what :func:`compare` reports as ``predicted
    cached``, by the same steps, without the rest of the comparison): the
    figure each partly fixed child of :mod:`fidelity.diff.breaks` keeps."""
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


def _breakpoints(segs: Sequence[Segment], ids: Sequence[Sequence[int]]) -> tuple[int, ...]:
    """Token offsets that close a segment carrying an explicit ``cache_control``
    marker (Anthropic and DashScope explicit caching)."""
    out: list[int] = []
    total = 0
    automatic = False
    for seg, seg_ids in zip(segs, ids):
        total += len(seg_ids)
        if b'"cache_control"' in seg.data:
            if seg.kind == "params":  # top-level automatic caching: the last block
                automatic = True
            elif total:
                out.append(total)
    if automatic and total and total not in out:
        out.append(total)
    return tuple(out)


def _anthropic_prompts(d: wire.Dialect, model: str, parent: bytes, child: bytes, p_segs: Sequence[Segment],
                       c_segs: Sequence[Segment], endpoint: str | None, key_changed: bool,
                       t_p: float = 0.0, t_c: float = 1.0,
                       ) -> tuple[cache_models.PromptTokens, cache_models.PromptTokens, bool]:
    """Both bodies as the cache simulator's Anthropic prompts
    (:func:`fidelity.cache.prompts.cache_prompt`: one rule for the simulator
    and the differ), and whether they share a cache partition: the same
    model (the params segment's other members are folded into the prompts
    by the invalidation table)."""
    from ..cache.prompts import cache_prompt

    def prompt(body: bytes, time: float) -> cache_models.PromptTokens:
        key = (d.name, model, endpoint, body)
        req = _PROMPTS.get(key)
        if req is None:
            req = cache_prompt(body, dialect=d.name, model=model, endpoint=endpoint).request
            if len(_PROMPTS) >= 4:
                _PROMPTS.pop(next(iter(_PROMPTS)))  # oldest first
            _PROMPTS[key] = req
        return cache_models.PromptTokens(req.tokens, time, req.breakpoints, req.ttls, req.blocks)

    same = not key_changed and _params(p_segs).get("model") == _params(c_segs).get("model")
    return prompt(parent, t_p), prompt(child, t_c), same


#: the last few bodies' Anthropic prompts: one parent against its children and
#: against each partly fixed child (fidelity.diff.breaks) is built once
_PROMPTS: dict[tuple[str, str, str | None, bytes], Any] = {}


def _params(segs: Sequence[Segment]) -> dict[str, Any]:
    """The params segment's members (empty when there is none or it does not parse)."""
    if not segs or segs[0].kind != "params":
        return {}
    try:
        value = jsonio.loads(b"{" + segs[0].data + b"}")
    except InputError:
        return {}
    return value if isinstance(value, dict) else {}


def _unmarked(segs: Sequence[Segment]) -> list[Segment]:
    from ..cache.prompts import strip_markers

    return [seg if b'"cache_control"' not in seg.data else
            Segment(seg.kind, seg.index, seg.pointer, strip_markers(seg.data), seg.text) for seg in segs]
