"""Why did the child miss the cache? Compare a parent and a child wire body:
the first divergent raw byte, the first divergent byte of the two cache views
(segment, pointer, excerpts), the cause, then tokens, predicted cache and the
cost of the loss. The steps and the JSON schema: docs/diff.md."""

from __future__ import annotations

import datetime as _dt
from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any, TypedDict, Unpack

import orjson

from .. import jsonbytes, jsonio, pricing, wire
from ..bytediff import excerpt, first_divergence
from ..cache.simulator import simulated
from ..cache.whole_view import view_of
from ..errors import InputError, UnknownName
from ..model import Request
from ..wire import Segment
from ..wire.evidence import detect_request
from ..wire.spans import compact_members, member_spans, value_spans
from ._prompts import _common_tokens, _first_differing_segment, _params, _prompts, _unmarked
from .causes import Cause, classify
from .locate import pointer_at
from .lost import lost_tokens

if TYPE_CHECKING:
    from .breaks import Break

__all__ = [
    "SCHEMA",
    "RawDiff",
    "ViewDiff",
    "TokenFigures",
    "CacheFigures",
    "CostFigures",
    "DiffResult",
    "compare",
    "compare_requests",
    "shared_tokens",
]

from .views import SCHEMA as SCHEMA  # the schema name lives with its view


@dataclass(frozen=True)
class RawDiff:
    identical: bool
    first_divergent_byte: int | None
    parent_size: int
    child_size: int


@dataclass(frozen=True)
class ViewDiff:
    first_divergent_byte: int | None
    segment: tuple[str, int] | None
    pointer: str | None
    parent_excerpt: str | None
    child_excerpt: str | None
    parent_segments: int
    child_segments: int
    #: the pointer of the first differing segment itself (``/messages/3``;
    #: ``""`` for params): the segment is named after it
    segment_pointer: str | None = None
    #: the JSON pointer of the first raw divergent byte, in the child's body
    #: (the parent's when the child ends there)
    raw_pointer: str | None = None
    #: why the raw first divergent byte is not the cache view's (``None``:
    #: both name the same place)
    raw_note: str | None = None


@dataclass(frozen=True)
class TokenFigures:
    tokenizer: str
    estimated: bool
    common_prefix: int
    parent_prompt: int
    child_prompt: int


@dataclass(frozen=True)
class CacheFigures:
    model: str
    predicted_cached: int
    written: int
    lost: int


@dataclass(frozen=True)
class CostFigures:
    usd_lost: float
    price_table: str
    as_of: str
    price_model: str
    source: str
    #: which of a row's time-of-day rates applied ("peak", "off-peak"); None: the row has one rate
    rate: str | None = None


@dataclass(frozen=True)
class DiffResult:
    dialect: str
    provider: str
    model: str
    raw: RawDiff
    view: ViewDiff
    cause: Cause
    tokens: TokenFigures
    cache: CacheFigures
    cost: CostFigures | None
    cost_note: str | None = None
    #: every break in cache order with what fixing it keeps
    #: (:func:`fidelity.diff.breaks.breaks_of`); ``None`` when not asked for
    breaks: tuple[Break, ...] | None = None

    def to_json(self) -> dict[str, Any]:
        """The stable, documented JSON schema (``fidelity.diff/1``): :func:`fidelity.diff.views.to_json`."""
        from .views import to_json

        return to_json(self)


class CompareOptions(TypedDict, total=False):
    """The keywords of :func:`compare` and :func:`compare_views`."""

    dialect: str | None
    model: str | None
    prices: pricing.PriceTable | None
    parent_path: str | None
    child_path: str | None
    endpoint: str | None
    at: _dt.datetime | None
    times: tuple[float, float] | None


def compare(parent: bytes, child: bytes, **options: Unpack[CompareOptions]) -> DiffResult:
    """Compare two wire bodies of one dialect (detected from the parent when not given).
    ``endpoint``: the URL both went to (``None``: the provider's own API); ``at``: when the
    child is sent, for time-of-day prices (``None``: peak); ``times``: when each was sent
    (epoch seconds; ``None``: one second apart). Options: docs/diff.md. Bad input raises
    :class:`InputError` naming the file (``parent_path`` / ``child_path``)."""
    return compare_views(parent, child, **options)[0]


def compare_views(parent: bytes, child: bytes,
                  **options: Unpack[CompareOptions]) -> tuple[DiffResult, list[Segment], list[Segment]]:
    """:func:`compare`, and the two cache views it compared (parent, child)."""
    unknown = options.keys() - CompareOptions.__annotations__.keys()
    if unknown:
        raise TypeError(f"compare() got unexpected keyword arguments: {', '.join(sorted(unknown))}")
    dialect, model, endpoint = options.get("dialect"), options.get("model"), options.get("endpoint")
    parent_path, child_path = options.get("parent_path"), options.get("child_path")
    parent_obj = jsonio.loads(parent, path=parent_path)
    child_obj = jsonio.loads(child, path=child_path)
    if dialect is not None:
        d = wire.get(dialect)
    else:
        d = wire.get(detect_request(parent_obj, path=parent_path).dialect)
        if not d.detect(child_obj):
            raise InputError(f"child body is not a {d.name} request like its parent", path=child_path)
    if model is None:
        model = _model_of(parent_obj) or _model_of(child_obj)
        if model is None:
            raise InputError("the body names no model; pass --model", path=parent_path)
    with jsonbytes.scan_memo():  # each container of each body scanned once
        with jsonio.parsed_once(parent, parent_obj):  # the cache view does not parse it again
            p_segs = _view(d, parent, parent_path, endpoint)
        del parent_obj  # large bodies: do not hold the parsed trees while tokenizing
        with jsonio.parsed_once(child, child_obj):
            c_segs = _view(d, child, child_path, endpoint)
        del child_obj
        result = _compare_views(d, model, parent, child, p_segs, c_segs, options.get("prices"), endpoint=endpoint,
                                at=options.get("at"), times=options.get("times"))
    return result, p_segs, c_segs


def compare_requests(
    parent: Request,
    child: Request,
    dialect: str,
    *,
    prices: pricing.PriceTable | None = None,
    bodies: tuple[bytes, bytes] | None = None,
) -> DiffResult:
    """Render both requests in ``dialect`` and compare the bodies
    (``bodies``: the two renders, where the caller already has them)."""
    d = wire.get(dialect)
    p_body, c_body = bodies if bodies is not None else (d.render(parent), d.render(child))
    # Some bodies do not carry the model (Gemini names it in the URL), and
    # one engine serves one model: another route never shares a cache entry.
    with jsonbytes.scan_memo():
        return _compare_views(d, child.route.model, p_body, c_body,
                              view_of(d, p_body), view_of(d, c_body), prices,
                              key_changed=parent.route != child.route)


def _view(d: wire.Dialect, body: bytes, path: str | None, endpoint: str | None = None) -> list[Segment]:
    try:
        segs = view_of(d, body, endpoint)  # memoised on the last bodies: a report views each body once
    except InputError as exc:
        raise (exc.at(path) if path else exc) from None
    if not any(seg.kind in ("system", "message") for seg in segs):
        # the dialects' cache views are lenient; a body of another shape (a
        # Gemini body under --provider openai-chat) would otherwise "diff" as empty
        raise InputError(f"not a {d.name} request body: it holds no system prompt or messages "
                         "for this dialect (wrong --provider?)", path=path)
    return segs


def _model_of(obj: Any) -> str | None:
    model = obj.get("model") if isinstance(obj, dict) else None
    return model if isinstance(model, str) else None


def _compare_views(
    d: wire.Dialect,
    model: str,
    parent: bytes,
    child: bytes,
    p_segs: Sequence[Segment],
    c_segs: Sequence[Segment],
    prices: pricing.PriceTable | None,
    *,
    key_changed: bool = False,
    endpoint: str | None = None,
    at: _dt.datetime | None = None,
    times: tuple[float, float] | None = None,
) -> DiffResult:
    raw_at = first_divergence(parent, child)
    raw = RawDiff(raw_at is None, raw_at, len(parent), len(child))
    p_marked, c_marked = p_segs, c_segs
    if d.provider == "anthropic":
        # Anthropic keys its cache on content, not on where cache_control markers sit
        # (the raw-byte diff above still shows a moved one): fidelity.cache.anthropic_blocks
        p_segs, c_segs = _unmarked(p_segs), _unmarked(c_segs)

    split = _first_differing_segment(p_segs, c_segs)
    note = None
    if d.provider == "anthropic" and split == 0 and not key_changed:
        # a setting of the invalidation table keeps the tools and system
        # caches: a change there is where the cache parts, named first
        found = _invalidation(p_segs, c_segs)
        later = _first_differing_segment(p_segs[1:], c_segs[1:]) if found else None
        if found and later is not None and 1 + later < len(p_segs) and 1 + later < len(c_segs) \
                and "message" not in (p_segs[1 + later].kind, c_segs[1 + later].kind):
            split, note = 1 + later, f"{found[0]} ({found[1]})"
    view = _locate_view(parent, child, p_segs, c_segs, split)
    if raw_at is not None:
        side = child if raw_at < len(child) else parent
        raw_ptr = _pointer_at(side, raw_at) if raw_at < len(side) else None
        view = replace(view, raw_pointer=raw_ptr, raw_note=_raw_why(raw_ptr, p_segs, c_segs, split, view.pointer))
    cause = classify(p_segs, c_segs, split, raw_identical=raw.identical)
    if note:
        cause = Cause(cause.kind, f"{cause.detail}; also {note}" if cause.detail else note, cause.segments)
    elif d.provider == "anthropic" and cause.kind == "params_changed":
        found = _invalidation(p_segs, c_segs)  # what the params change invalidates, per the table
        if found is not None:
            cause = Cause(cause.kind, f"{cause.detail} ({found[1]})" if cause.detail else found[1], cause.segments)

    pr = _prompts(d, model, parent, child, p_marked, c_marked, p_segs, c_segs, split, endpoint, key_changed,
                  times)
    read, written = pr.read()
    figures = TokenFigures(pr.tok.name, pr.tok.estimated, pr.shared, pr.p_len, pr.c_len)
    # what a child that kept the parent's prefix would have read, less the prediction
    lost = lost_tokens(pr.cm, pr.p_prompt, pr.c_prompt, read, same_key=pr.same_key, shared=pr.shared,
                       levels=pr.levels)
    if times is not None and lost and not simulated(pr.cm, [pr.p_prompt],
                                                    replace(pr.p_prompt, time=pr.c_prompt.time)).cache_read:
        lost = 0  # nothing the parent wrote was alive when the child came (scan counts it so too)
    cache_fig = CacheFigures(pr.cm.name, read, written, lost)
    cost, note = _cost(prices, d.provider, model, lost, pr.c_len, at)
    return DiffResult(d.name, d.provider, model, raw, view, cause, figures, cache_fig, cost, note)


def shared_tokens(p_segs: Sequence[Segment], p_ids: Sequence[Sequence[int]],
                  c_segs: Sequence[Segment], c_ids: Sequence[Sequence[int]]) -> int:
    """Tokens at the start of the child's cache view that the parent's shares."""
    return _common_tokens(p_ids, c_ids, _first_differing_segment(p_segs, c_segs))


def _pointer_at(body: bytes, offset: int) -> str:
    """:func:`fidelity.diff.locate.pointer_at`, scanning only the top-level member
    (and array element) that holds ``offset`` when the body is compact."""
    layout = compact_members(body)
    if layout is None:
        return pointer_at(body, offset)
    for member, elements in layout.values():
        if member.start > offset:
            break
        if member.value_start <= offset < member.end:
            path, lo, hi = "/" + jsonbytes.escape_token(member.key), member.value_start, member.end
            if elements is not None:
                for index, (start, end) in enumerate(elements):
                    if start <= offset < end:
                        path, lo, hi = f"{path}/{index}", start, end
                        break
                else:  # on a comma or a bracket of the array
                    return path
            return path + pointer_at(body[lo:hi], offset - lo)
    return ""


def _locate_view(parent: bytes, child: bytes, p_segs: Sequence[Segment],
                 c_segs: Sequence[Segment], split: int | None) -> ViewDiff:
    counts = (len(p_segs), len(c_segs))
    if split is None:
        return ViewDiff(None, None, None, None, None, *counts)
    p_seg = p_segs[split] if split < len(p_segs) else None
    c_seg = c_segs[split] if split < len(c_segs) else None
    inner = (first_divergence(p_seg.data, c_seg.data) if p_seg and c_seg else 0) or 0
    at = sum(len(s.data) for s in (c_segs if c_seg else p_segs)[:split]) + inner
    seg = c_seg or p_seg
    assert seg is not None
    # a side that ends before the split shows where its cache view ends, not where its
    # raw body does (which may hold tools or params that come earlier in the cache view)
    p_at = _body_offset(parent, p_seg, inner) if p_seg else _view_end(parent, p_segs[:split])
    c_at = _body_offset(child, c_seg, inner) if c_seg else _view_end(child, c_segs[:split])
    body, body_at = (child, c_at) if c_seg else (parent, p_at)
    return ViewDiff(
        at,
        (seg.kind, seg.index),
        _pointer_at(body, body_at) if body_at < len(body) else seg.pointer,
        excerpt(parent, p_at),
        excerpt(child, c_at),
        *counts,
        seg.pointer,
    )


def _raw_why(raw_ptr: str | None, p_segs: Sequence[Segment], c_segs: Sequence[Segment],
             split: int | None, view_ptr: str | None) -> str | None:
    """Why the bodies' first raw divergent byte (at ``raw_ptr``) is not where
    the cache views part (``None`` when it is the same place)."""
    if raw_ptr is None:
        return "one body is a byte prefix of the other"
    if view_ptr is not None and (raw_ptr == view_ptr or raw_ptr.startswith(view_ptr + "/")
                                 or view_ptr.startswith(raw_ptr + "/")):
        return None
    top = raw_ptr.split("/")[1] if raw_ptr.count("/") else ""
    for segs, other in ((c_segs, p_segs), (p_segs, c_segs)):
        theirs = {seg.pointer: seg.data for seg in other}
        for i, seg in enumerate(segs):
            if seg.pointer == "" and seg.kind == "params":
                held = f'"{top}"'.encode() in seg.data
            else:
                held = raw_ptr == seg.pointer or raw_ptr.startswith(seg.pointer + "/")
            # the raw bytes part where an array grows or shrinks: its first element that differs
            within = seg.pointer.startswith(raw_ptr + "/") and theirs.get(seg.pointer) != seg.data
            if not (held or within):
                continue
            if split is None or i < split:
                return (f"the raw bodies part at {raw_ptr!r}, which the cache view reads as the same on both "
                        "sides (it leaves out cache_control markers and reads top-level keys in the cache's order)")
            return (f"the raw bodies part at {raw_ptr!r}, which the cache view reads after where it parts "
                    "(it orders the body as the provider's cache reads it)")
    return (f"the raw bodies part at {raw_ptr!r}, which the cache view leaves out "
            "(the provider's cache does not key on it)")


def _view_end(body: bytes, segs: Sequence[Segment]) -> int:
    """Where the last byte of a cache view's last segment ends in the body."""
    for seg in reversed(segs):
        if seg.data:
            return _body_offset(body, seg, len(seg.data) - 1) + 1
    return 0


def _body_offset(body: bytes, seg: Segment, inner: int) -> int:
    """Where byte ``inner`` of a segment sits in the wire body."""
    if seg.pointer == "" and seg.kind == "params":
        # The params segment concatenates top-level members in cache order.
        pos = 0
        for member in member_spans(body):
            raw = body[member.start : member.end]
            if seg.data.startswith(raw, pos):
                if inner < pos + len(raw):
                    return member.start + (inner - pos)
                pos += len(raw)
        return 0
    span = value_spans(body, [seg.pointer]).get(seg.pointer)
    if span is None:
        found = body.find(seg.data)
        return max(found, 0) + inner
    return span[0] + inner


def _invalidation(p_segs: Sequence[Segment], c_segs: Sequence[Segment]) -> tuple[str, str] | None:
    """(what changed, what it invalidates) for an Anthropic params change that the
    invalidation table covers (:mod:`fidelity.cache.invalidation`; the widest one when
    several changed); ``None`` when none changed or a member outside the table (the model) did."""
    from ..cache.invalidation import LEVELS, describe, invalidated_levels
    from .causes import _params_detail

    a, b = _params(p_segs), _params(c_segs)
    changed = [k for k in dict.fromkeys([*a, *b]) if a.get(k, _ABSENT) != b.get(k, _ABSENT)]
    levels = {k: invalidated_levels(k) for k in changed}
    if not changed or any(v is None for v in levels.values()):
        return None
    widest = min(changed, key=lambda k: LEVELS.index((levels[k] or LEVELS)[0]))
    before = orjson.dumps({widest: a[widest]} if widest in a else {})[1:-1]
    after = orjson.dumps({widest: b[widest]} if widest in b else {})[1:-1]
    return _params_detail(before, after), describe(widest) or ""


_ABSENT = object()


def _cost(prices: pricing.PriceTable | None, provider: str, model: str,
          lost: int, prompt_tokens: int, at: _dt.datetime | None = None) -> tuple[CostFigures | None, str | None]:
    """What the lost tokens cost per child request (:func:`fidelity.pricing.lost_cost`,
    at ``at``'s rate where prices depend on the time of day, the peak rate
    without a time); no figure and a note when the price is unknown."""
    table = prices if prices is not None else pricing.load()
    try:
        price = table.lookup(provider, model)
    except UnknownName as exc:  # the report still stands without a price
        return None, f"no price: {exc}"
    usd = pricing.lost_cost(price, lost, prompt_tokens=prompt_tokens, at=at)
    if usd is None:
        return None, f"cost unknown: {table.name} gives {price.model} no cache-read price"
    rate = None if price.off_peak is None else ("off-peak" if at is not None and not price.is_peak(at) else "peak")
    return CostFigures(usd, table.name, table.as_of, price.model, price.source, rate), None
