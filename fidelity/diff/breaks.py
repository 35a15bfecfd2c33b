"""Every break between a parent and a child, and what fixing each keeps:
:func:`breaks_of` aligns the two cache views lane by lane and groups the
divergences into :class:`Break` values. The rules: docs/diff.md, "Every break,
and what fixing it keeps"."""

from __future__ import annotations

import datetime as _dt
import re
from collections.abc import Sequence
from dataclasses import dataclass, replace
from difflib import SequenceMatcher
from typing import TYPE_CHECKING, Any

import orjson

from .. import pricing, wire
from ..bytediff import excerpt, first_divergence
from ..errors import InputError
from ..jsonbytes import scan_memo
from ..wire import Segment
from ._rebuild import Slot, fixed_child
from .causes import classify, tool_name

if TYPE_CHECKING:
    from ._compare import DiffResult

__all__ = ["Break", "breaks_of", "compare_with_breaks", "MAX_BUILT"]

#: breaks whose counterfactual child is built and compared (the last one always is)
MAX_BUILT = 32

#: where a tool call's arguments sit: Chat ``function.arguments``, a Responses
#: ``function_call`` item's ``arguments``, an Anthropic ``tool_use`` block's ``input``
_ARGUMENTS = re.compile(r"(/function/arguments|^/input/\d+/arguments|/content/\d+/input(/.*)?)$")

_KIND = {"params": "params_changed", "tools": "tools_changed", "system": "system_changed",
         "message": "messages_rewritten"}


@dataclass(frozen=True)
class Break:
    """One divergence of the child from its parent, in cache order: ``pointer`` in the
    child's body (the parent's when it only removes: ``side``), ``offset`` in the child's
    cache view, the bytes and tokens it covers (the child's side, else the parent's), the
    ``elements`` it groups; ``kept``: cached tokens with it and every break before fixed
    (``None``: not built, or past the first :data:`MAX_BUILT` but the last); ``usd_saved``."""

    kind: str
    detail: str
    segment: str
    pointer: str
    side: str
    offset: int
    parent_excerpt: str | None
    child_excerpt: str | None
    parent_bytes: int
    child_bytes: int
    tokens: int
    elements: int
    kept: int | None = None
    usd_saved: float | None = None

    def to_json(self) -> dict[str, Any]:
        return {"kind": self.kind, "detail": self.detail, "segment": self.segment, "pointer": self.pointer,
                "side": self.side, "cache_view_offset": self.offset, "parent_excerpt": self.parent_excerpt,
                "child_excerpt": self.child_excerpt, "parent_bytes": self.parent_bytes,
                "child_bytes": self.child_bytes, "tokens": self.tokens, "elements": self.elements,
                "kept_if_fixed": self.kept,
                "usd_saved_if_fixed": None if self.usd_saved is None else round(self.usd_saved, 8)}


def compare_with_breaks(parent: bytes, child: bytes, *, prices: pricing.PriceTable | None = None,
                        endpoint: str | None = None, at: _dt.datetime | None = None,
                        times: tuple[float, float] | None = None, **kwargs: Any) -> DiffResult:
    """:func:`fidelity.diff.compare` with :attr:`DiffResult.breaks` filled."""
    from ._compare import compare_views

    if prices is None:
        prices = pricing.load()  # once for the headline and every counterfactual
    result, p_segs, c_segs = compare_views(parent, child, prices=prices, endpoint=endpoint, at=at, times=times,
                                           **kwargs)
    found = breaks_of(parent, child, prices=prices, endpoint=endpoint, at=at, result=result, views=(p_segs, c_segs),
                      times=times)
    return replace(result, breaks=tuple(found))


def breaks_of(parent: bytes, child: bytes, *, dialect: str | None = None, model: str | None = None,
              prices: pricing.PriceTable | None = None, endpoint: str | None = None,
              at: _dt.datetime | None = None, result: DiffResult | None = None,
              views: tuple[Sequence[Segment], Sequence[Segment]] | None = None,
              counted: bool = True, times: tuple[float, float] | None = None) -> list[Break]:
    """Every break of ``child`` against ``parent`` in cache order (empty when the child
    only appends or is identical). ``result``/``views``: the headline comparison and
    cache views when the caller has them. ``counted=False``: no tokens, ``kept`` or
    ``usd_saved`` and no comparison (then ``dialect`` is required unless ``result`` is
    given). Bad input raises :class:`InputError`."""
    from ._compare import _cost, _view, compare
    from ._prompts import _unmarked, predicted_read

    if counted and prices is None:
        prices = pricing.load()  # once for every counterfactual
    if result is None and counted:
        result = compare(parent, child, dialect=dialect, model=model, prices=prices, endpoint=endpoint, at=at,
                         times=times)
    if result is not None:
        d, model = wire.get(result.dialect), result.model
    elif dialect is None:
        raise TypeError("breaks_of(counted=False) needs the dialect (or the headline result)")
    else:
        d, model = wire.get(dialect), model or ""
    p_raw, c_raw = views if views is not None else (_view(d, parent, None, endpoint), _view(d, child, None, endpoint))
    p_segs, c_segs = (_unmarked(p_raw), _unmarked(c_raw)) if d.provider == "anthropic" else (p_raw, c_raw)
    slots, found = _align(p_segs, c_segs)
    if not found:
        return []
    if not counted or result is None:
        return _listed(found, slots, child, c_segs, {}, {})
    from ..cache.prompts import cache_prompt

    # each segment's ids as the one builder counted them (markers removed for Anthropic, as in c_segs)
    c_ids = cache_prompt(child, dialect=d.name, model=model, endpoint=endpoint).segment_ids
    p_ids = cache_prompt(parent, dialect=d.name, model=model, endpoint=endpoint).segment_ids
    c_len = {id(s): len(i) for s, i in zip(c_segs, c_ids)}
    p_len = {id(s): len(i) for s, i in zip(p_segs, p_ids)}
    out = _listed(found, slots, child, c_segs, c_len, p_len)
    base = result.cache.predicted_cached
    # each counterfactual is a whole comparison: only the first MAX_BUILT breaks and the last get one
    built = set(range(min(len(found), MAX_BUILT))) | {len(found) - 1}
    fixed: list[Break] = []
    spans: dict[tuple[int, str], list[tuple[int, int]]] = {}  # the two bodies' arrays, for every rebuild
    for i, brk in enumerate(out):
        if i not in built:
            fixed.append(brk)
            continue
        try:
            with scan_memo():  # each array of the two bodies scanned once per rebuild
                body = fixed_child(parent, child, slots, set(range(i + 1)), spans)
            # compare(parent, body)'s predicted cached tokens, the parent's cache view cut once for all
            kept = predicted_read(d, model, parent, body, p_raw, _view(d, body, None, endpoint), endpoint, times)
        except InputError:  # the fixed child could not be built: kept stays None
            fixed.append(brk)
            continue
        cost, _ = _cost(prices, d.provider, model, max(0, kept - base), result.tokens.child_prompt, at)
        fixed.append(replace(brk, kept=kept, usd_saved=None if cost is None else cost.usd_lost))
    return fixed


def _listed(found: list[tuple[str, str]], slots: list[Slot], child: bytes, c_segs: Sequence[Segment],
            c_len: dict[int, int], p_len: dict[int, int]) -> list[Break]:
    """Each break found, described (tokens from ``c_len``/``p_len``, 0 where not counted)."""
    offsets: dict[int, int] = {}
    end = 0
    for seg in c_segs:
        offsets[id(seg)] = end
        end += len(seg.data)
    owned: dict[int, list[Slot]] = {}
    for s in slots:
        if s.owner is not None:
            owned.setdefault(s.owner, []).append(s)
    return [_describe(kind, detail, owned[i], slots, child, offsets, end, c_len, p_len)
            for i, (kind, detail) in enumerate(found)]


# -- alignment -----------------------------------------------------------------

def _lanes(segs: Sequence[Segment]) -> dict[str, list[Segment]]:
    """Segments by kind, the kinds in the order the cache view gives them."""
    out: dict[str, list[Segment]] = {}
    for seg in segs:
        out.setdefault(seg.kind, []).append(seg)
    return out


def _align(p_segs: Sequence[Segment], c_segs: Sequence[Segment]) -> tuple[list[Slot], list[tuple[str, str]]]:
    """Slots of every lane in cache order and the breaks found (a slot's ``owner`` indexes them)."""
    p_l, c_l = _lanes(p_segs), _lanes(c_segs)
    order = list(dict.fromkeys([*c_l, *p_l]))
    slots: list[Slot] = []
    found: list[tuple[str, str]] = []
    for k, lane in enumerate(order):
        a, b = p_l.get(lane, []), c_l.get(lane, [])
        if lane == "tools":
            _align_tools(a, b, slots, found)
        else:
            # segments past the parent's last one are appended only in the parent's last lane
            tail = not any(p_l.get(later) for later in order[k + 1 :])
            _align_runs(lane, a, b, slots, found, tail)
    return slots, found


def _align_runs(lane: str, a: list[Segment], b: list[Segment], slots: list[Slot],
                found: list[tuple[str, str]], tail: bool = True) -> None:
    """System blocks, messages, params: equal runs anchor, a replaced run of equal
    length pairs up, one whose length changed is one break; in the ``tail`` lane
    what the child adds after the parent's last segment is appended, not a break."""
    sm = SequenceMatcher(None, [s.data for s in a], [s.data for s in b], autojunk=False)
    ops = sm.get_opcodes()
    renamed: dict[str, tuple[str, int]] = {}  # tool-call id the child renamed -> (its new id, the break)
    for n, (tag, i1, i2, j1, j2) in enumerate(ops):
        if tag == "equal":
            slots.extend(Slot(p, c) for p, c in zip(a[i1:i2], b[j1:j2]))
        elif tag == "insert" and tail and i1 == len(a) and n == len(ops) - 1:
            slots.extend(Slot(None, c) for c in b[j1:j2])  # appended after the parent's last: kept
        elif tag == "replace" and (i2 - i1 == j2 - j1 or (tail and i2 == len(a) and j2 - j1 > i2 - i1)):
            # the same count pairs up; at the parent's end, what the child has beyond it is appended
            for p, c in zip(a[i1:i2], b[j1:j2]):
                owner = _renamed_only(p, c, renamed) if lane == "message" else None
                if owner is None:
                    found.append((_KIND[lane], _pair_detail(p, c)))
                    owner = len(found) - 1
                    if lane == "message" and (names := _note_renames(p, c, owner, renamed)):
                        found[owner] = (found[owner][0], f"tool-call id renamed: {names} (at {c.pointer})")
                slots.append(Slot(p, c, owner))
            slots.extend(Slot(None, c) for c in b[j1 + (i2 - i1) : j2])
        else:
            found.append((_KIND[lane], _run_detail(lane, i2 - i1, j2 - j1, b[j1] if j1 < j2 else None,
                                                   a[i1] if i1 < i2 else None)))
            slots.extend(Slot(p, None, len(found) - 1) for p in a[i1:i2])
            slots.extend(Slot(None, c, len(found) - 1) for c in b[j1:j2])


def _call_ids(value: Any) -> list[str]:
    """The tool-call ids a message defines: Chat ``tool_calls[].id``, Anthropic
    ``tool_use`` ``id``, a Responses ``function_call`` item's ``call_id``."""
    out: list[str] = []
    if not isinstance(value, dict):
        return out
    for call in value.get("tool_calls") or ():
        if isinstance(call, dict) and isinstance(call.get("id"), str):
            out.append(call["id"])
    if value.get("type") == "function_call" and isinstance(value.get("call_id"), str):
        out.append(value["call_id"])
    content = value.get("content")
    for block in content if isinstance(content, list) else ():
        if isinstance(block, dict) and block.get("type") == "tool_use" and isinstance(block.get("id"), str):
            out.append(block["id"])
    return out


def _with_ids(value: Any, ids: dict[str, str]) -> Any:
    """``value`` with every string that is a key of ``ids`` replaced by its value."""
    if isinstance(value, str):
        return ids.get(value, value)
    if isinstance(value, list):
        return [_with_ids(v, ids) for v in value]
    if isinstance(value, dict):
        return {k: _with_ids(v, ids) for k, v in value.items()}
    return value


def _note_renames(p: Segment, c: Segment, owner: int, renamed: dict[str, tuple[str, int]]) -> str | None:
    """Record the tool-call ids a changed message renames; ``"a → b, ..."`` when that is its only change."""
    va, vb = _loads(p.data), _loads(c.data)
    a, b = _call_ids(va), _call_ids(vb)
    if len(a) != len(b):
        return None
    pairs = [(x, y) for x, y in zip(a, b) if x != y]
    ids = dict(pairs)
    renamed.update({x: (y, owner) for x, y in ids.items()})
    if not ids or _with_ids(va, ids) != vb:
        return None
    return ", ".join(f"{x} → {y}" for x, y in pairs)


def _renamed_only(p: Segment, c: Segment, renamed: dict[str, tuple[str, int]]) -> int | None:
    """The earlier break a changed message belongs to when it differs only by ids
    that break renamed (``None``: it has a change of its own)."""
    if not renamed:
        return None
    va, vb = _loads(p.data), _loads(c.data)
    if va is None or vb is None:
        return None
    used = {old: new for old, (new, _) in renamed.items()}
    if _with_ids(va, used) != vb:
        return None
    text = p.data.decode("utf-8", "replace")
    return min((owner for old, (_, owner) in renamed.items() if old in text), default=None)


def _loads(data: bytes) -> Any:
    try:
        return orjson.loads(data)
    except orjson.JSONDecodeError:
        return None


def _run_detail(lane: str, removed: int, added: int, first_c: Segment | None, first_p: Segment | None) -> str:
    what = {"message": "message", "system": "system section", "params": "params"}.get(lane, lane)
    where = f" (at {first_c.pointer})" if first_c is not None else (
        f" (parent's {first_p.pointer})" if first_p is not None else "")
    if not removed:
        return f"{what} inserted ×{added}{where}" if added > 1 else f"{what} inserted{where}"
    if not added:
        return f"{what} removed ×{removed}{where}" if removed > 1 else f"{what} removed{where}"
    return f"{removed} {what}(s) replaced by {added}{where}"


def _pair_detail(p: Segment, c: Segment) -> str:
    cause = classify([replace(p, index=0)], [replace(c, index=0)], 0)
    return cause.detail or "changed"


def _align_tools(a: list[Segment], b: list[Segment], slots: list[Slot], found: list[tuple[str, str]]) -> None:
    """Tools by name: those dropped are one break, those added another, those moved
    one; a tool kept in place whose bytes differ is a break of its own."""
    if len(a) == len(b) and all(p.data == c.data for p, c in zip(a, b)):
        slots.extend(Slot(p, c) for p, c in zip(a, b))  # the same tools: no name needs reading
        return

    def key(s: Segment) -> Any:
        name = tool_name(s.data)
        return name if name is not None else s.data

    ka, kb = [key(s) for s in a], [key(s) for s in b]
    sm = SequenceMatcher(None, ka, kb, autojunk=False)
    start = len(slots)
    removed: list[Slot] = []
    added: list[Slot] = []
    for tag, i1, i2, j1, j2 in sm.get_opcodes():
        if tag == "equal":
            for p, c in zip(a[i1:i2], b[j1:j2]):
                slot = Slot(p, c)
                if p.data != c.data:
                    found.append(("tools_changed", _pair_detail(p, c)))
                    slot.owner = len(found) - 1
                slots.append(slot)
            continue
        gone_here, new_here = [Slot(p, None) for p in a[i1:i2]], [Slot(None, c) for c in b[j1:j2]]
        slots += gone_here + new_here
        removed += gone_here
        added += new_here
    moved = set(map(key, (s.p for s in removed if s.p))) & set(map(key, (s.c for s in added if s.c)))
    groups: list[tuple[str, list[Slot]]] = []
    gone = [s for s in removed if s.p is not None and key(s.p) not in moved]
    new = [s for s in added if s.c is not None and key(s.c) not in moved]
    if gone:
        groups.append(("tool removed: " + ", ".join(sorted(str(key(s.p)) for s in gone if s.p)), gone))
    if new:
        groups.append(("tool added: " + ", ".join(str(key(s.c)) for s in new if s.c), new))
    if moved:  # one reorder, one fix: the parent's order put back
        both = [s for s in removed + added if (s.p is not None and key(s.p) in moved)
                or (s.c is not None and key(s.c) in moved)]
        names = [str(key(s.c)) for s in added if s.c is not None and key(s.c) in moved]
        groups.append((("tool moved: " if len(names) == 1 else "tools reordered: ") + ", ".join(names), both))
    # in cache order: the first slot each group owns
    lane = slots[start:]
    place = {id(s): n for n, s in enumerate(lane)}
    groups.sort(key=lambda g: min(place[id(s)] for s in g[1]))
    for detail, members in groups:
        found.append(("tools_changed", detail))
        for s in members:
            s.owner = len(found) - 1
    _renumber(slots, found, start)


def _renumber(slots: list[Slot], found: list[tuple[str, str]], start: int) -> None:
    """Number a lane's breaks in cache order (first slot each owns)."""
    first: dict[int, int] = {}
    for pos, s in enumerate(slots[start:]):
        if s.owner is not None and s.owner not in first:
            first[s.owner] = pos
    lane_ids = sorted(first, key=first.__getitem__)
    if not lane_ids:
        return
    low = min(lane_ids)
    mapping = {old: low + n for n, old in enumerate(lane_ids)}
    reordered = [found[old] for old in lane_ids]
    found[low : low + len(reordered)] = reordered
    for s in slots[start:]:
        if s.owner is not None:
            s.owner = mapping[s.owner]


# -- description -------------------------------------------------------------------

def _pointer_in(seg: Segment, inner: int, child: bytes) -> str:
    """The pointer of the deepest value holding byte ``inner`` of ``seg``, read from
    the segment's own bytes where they are one JSON value, else from the body."""
    from ._compare import _body_offset
    from .locate import pointer_at

    if seg.kind != "params" and inner < len(seg.data):
        try:
            return seg.pointer + pointer_at(seg.data, inner)
        except (InputError, ValueError, IndexError):  # not a JSON value of its own
            pass
    body_at = _body_offset(child, seg, inner)
    return pointer_at(child, body_at) if body_at < len(child) else seg.pointer


def _describe(kind: str, detail: str, mine: list[Slot], slots: list[Slot], child: bytes,
              offsets: dict[int, int], end: int, c_len: dict[int, int], p_len: dict[int, int]) -> Break:
    cs = [s.c for s in mine if s.c is not None]
    ps = [s.p for s in mine if s.p is not None]
    first = mine[0]
    segment = (cs or ps)[0].kind
    if first.p is not None and first.c is not None:
        inner = first_divergence(first.p.data, first.c.data) or 0
        off = offsets[id(first.c)] + inner
        pointer = _pointer_in(first.c, inner, child)
        p_ex, c_ex, side = excerpt(first.p.data, inner), excerpt(first.c.data, inner), "child"
    elif cs:
        off, pointer, side = offsets[id(cs[0])], cs[0].pointer, "child"
        p_ex, c_ex = None, excerpt(cs[0].data, 0)
    else:
        # removed only: where the child goes on after the parent's segment
        pos = next(n for n, s in enumerate(slots) if s is first)
        nxt = next((s.c for s in slots[pos:] if s.c is not None), None)
        off = offsets[id(nxt)] + (first_divergence(ps[0].data, nxt.data) or 0) if nxt is not None else end
        pointer, side = ps[0].pointer, "parent"
        p_ex, c_ex = excerpt(ps[0].data, 0), None
    if kind == "messages_rewritten" and detail.startswith("text edited") and _ARGUMENTS.search(pointer):
        detail = f"tool-call arguments rewritten (at {pointer})"  # the call's id and name kept
    toks = sum(c_len.get(id(s), 0) for s in cs) if cs else sum(p_len.get(id(s), 0) for s in ps)
    return Break(kind, detail, segment, pointer, side, off, p_ex, c_ex, sum(len(s.data) for s in ps),
                 sum(len(s.data) for s in cs), toks, max(len(cs), len(ps)))
