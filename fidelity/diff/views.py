"""Every view of a :class:`~fidelity.diff.DiffResult`, built from the same
figures: :func:`to_json` (``fidelity.diff/1``), :func:`console` (rich; the
only importer of ``rich``), :func:`text_lines` (the failure text of
``assert_prefix_preserved``) and :func:`annotation` (a gate row's detail)."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from .. import formats

if TYPE_CHECKING:  # pragma: no cover
    from rich.console import Group

    from ._compare import DiffResult

__all__ = ["SCHEMA", "to_json", "headline", "fields", "console", "text_lines", "annotation", "segment_name",
           "name_segment", "break_lines"]

SCHEMA = "fidelity.diff/1"

#: causes under which the child keeps the parent's whole prefix
PRESERVED = ("identical", "appended_only")


def to_json(result: DiffResult) -> dict[str, Any]:
    """The stable, documented JSON schema (``fidelity.diff/1``, ``docs/diff.md``)."""
    view = result.view
    cost: dict[str, Any] | None = None
    if result.cost is not None:
        cost = {
            "usd_lost_per_request": round(result.cost.usd_lost, 8),
            "usd_lost_per_1000": round(result.cost.usd_lost * 1000, 6),
            "price_table": result.cost.price_table,
            "as_of": result.cost.as_of,
            "price_model": result.cost.price_model,
            "source": result.cost.source,
            "rate": result.cost.rate,
        }
    return {
        "schema": SCHEMA,
        "dialect": result.dialect,
        "provider": result.provider,
        "model": result.model,
        "raw": {
            "identical": result.raw.identical,
            "first_divergent_byte": result.raw.first_divergent_byte,
            "parent_bytes": result.raw.parent_size,
            "child_bytes": result.raw.child_size,
            "pointer": view.raw_pointer,
            "note": view.raw_note,
        },
        "cache_view": {
            "identical": view.first_divergent_byte is None,
            "first_divergent_byte": view.first_divergent_byte,
            "segment": None if view.segment is None else {"kind": view.segment[0], "index": view.segment[1],
                                                          "name": segment_name(result)},
            "pointer": view.pointer,
            "parent_excerpt": view.parent_excerpt,
            "child_excerpt": view.child_excerpt,
            "parent_segments": view.parent_segments,
            "child_segments": view.child_segments,
        },
        "cause": {"kind": result.cause.kind, "detail": result.cause.detail, "deepdiff": result.cause.summary},
        "tokens": {
            "tokenizer": result.tokens.tokenizer,
            "estimated": result.tokens.estimated,
            "common_prefix": result.tokens.common_prefix,
            "parent_prompt": result.tokens.parent_prompt,
            "child_prompt": result.tokens.child_prompt,
        },
        "cache": {
            "model": result.cache.model,
            "predicted_cached": result.cache.predicted_cached,
            "written": result.cache.written,
            "lost": result.cache.lost,
        },
        "cost": cost,
        "cost_note": result.cost_note,
        "breaks": None if result.breaks is None else [b.to_json() for b in result.breaks],
    }


def segment_name(result: DiffResult) -> str | None:
    """The first differing segment's name (:func:`name_segment`), ``None``
    when the cache views are identical."""
    view = result.view
    if view.segment is None:
        return None
    kind, index = view.segment
    return name_segment(kind, index, view.segment_pointer)


def name_segment(kind: str, index: int, pointer: str | None) -> str:
    """A cache-view segment named after where it sits in the body, so that a
    user finds it there: ``messages[3]``, ``tools[0]``, ``system`` (a string
    system prompt), ``tools/0/functionDeclarations[2]`` (a Gemini
    declaration), ``params`` (``pointer == ""``); with its kind when the
    body's array holds other kinds too (``messages[0] (system)``), and
    ``kind[index]`` when no pointer is known. The name and the pointer never
    disagree on an index. The one namer of every view (diff, report, proxy)."""
    if pointer is None:
        return f"{kind}[{index}]"
    if pointer == "":
        return "params"
    from ..jsonbytes import split_pointer

    parts = split_pointer(pointer)
    if parts[-1].isdigit():
        name = f"{'/'.join(parts[:-1])}[{parts[-1]}]"
    else:
        name = "/".join(parts)
    head = name.split("[", 1)[0].split("/")[-1]
    return name if head.rstrip("s") == kind.rstrip("s") else f"{name} ({kind})"


def headline(result: DiffResult) -> tuple[bool, str]:
    """``(ok, verdict)``: whether no cached token is lost, and the words for it."""
    if result.cause.kind in PRESERVED:
        return True, "✔ prefix preserved"
    if result.cache.lost == 0:
        return True, "✔ no cached token lost (the bodies diverge past what the cache can serve)"
    return False, "✘ prefix broken"


def fields(result: DiffResult) -> list[tuple[str, str]]:
    """``(label, value)`` rows of the console view, in order."""
    raw, view = result.raw, result.view
    rows = [("dialect", f"{result.dialect} ({result.provider}), model {result.model}"),
            ("raw bytes", "identical" if raw.identical else
             f"first divergent byte {raw.first_divergent_byte} of {raw.parent_size} / {raw.child_size}")]
    if view.raw_note:
        rows.append(("", view.raw_note))
    if view.segment is not None:
        rows.append(("cache view", f"first divergent byte {view.first_divergent_byte}, "
                     f"segment {segment_name(result)}, pointer {view.pointer!r}"))
        rows.append(("parent", view.parent_excerpt or ""))
        rows.append(("child", view.child_excerpt or ""))
    else:
        rows.append(("cache view", "identical"))
    t, c = result.tokens, result.cache
    rows.append(("tokens", f"common prefix {t.common_prefix:,} · parent {t.parent_prompt:,} · child "
                 f"{t.child_prompt:,}  [{t.tokenizer}{', estimated' if t.estimated else ''}]"))
    rows.append(("cache", f"predicted cached {c.predicted_cached:,} · lost {c.lost:,}  [{c.model}]"))
    if result.cost:
        rows.append(("cost", f"{formats.usd(result.cost.usd_lost, 6)} lost per child request "
                     f"({formats.usd(result.cost.usd_lost * 1000)} per 1,000)  "
                     f"[{result.cost.price_table}, {result.cost.as_of}, {result.cost.price_model}"
                     f"{', ' + result.cost.rate + ' rate' if result.cost.rate else ''}]"))
    elif result.cost_note:
        rows.append(("cost", result.cost_note))
    return rows


def console(result: DiffResult) -> Group:
    """The rich view ``fidelity diff`` prints: the verdict and cause, then
    :func:`fields` as a two-column table."""
    from rich.console import Group
    from rich.table import Table
    from rich.text import Text

    ok, verdict = headline(result)
    head = Text()
    head.append(verdict, style="bold green" if ok else "bold red")
    head.append(f"  {result.cause.kind}")
    if result.cause.detail:
        head.append(f": {result.cause.detail}", style="yellow")
    table = Table(show_header=False, box=None, pad_edge=False)
    table.add_column(style="bold")
    table.add_column()
    for label, value in fields(result):
        table.add_row(label, Text(value) if label in ("parent", "child") else value)
    lines = break_lines(result)
    return Group(head, table, Text("\n".join(lines))) if lines else Group(head, table)


def break_lines(result: DiffResult) -> list[str]:
    """Every break in cache order (cause, where, what it covers, what fixing it and
    the ones before keeps), then what a fully fixed child keeps; empty without breaks."""
    breaks = result.breaks
    if not breaks:
        return []
    read = result.cache.predicted_cached
    out = [f"breaks ({len(breaks)}, in cache order; 'keeps': the child's cached tokens with that fix "
           "and every one above it)"]
    for n, b in enumerate(breaks, 1):
        where = f"{b.pointer!r}" + (" (parent's; the child has none)" if b.side == "parent" else "")
        out.append(f"  {n}. {b.kind}: {b.detail}")
        out.append(f"     at {where}, cache view byte {b.offset:,}; {b.parent_bytes:,} / {b.child_bytes:,} bytes, "
                   f"{b.tokens:,} tokens" + (f", {b.elements} segments" if b.elements > 1 else ""))
        out.append(f"     fixed: keeps {_kept(b, read)}")
    last = breaks[-1]
    out.append(f"  fully fixed child keeps {_kept(last, read)}")
    return out


def _kept(b: Any, read: int) -> str:
    if b.kept is None:
        return "not computed (past the first breaks, or the fixed child could not be built)"
    usd = f", {formats.usd(b.usd_saved, 6)} saved per child request" if b.usd_saved is not None else ""
    return f"{b.kept:,} cached tokens (+{max(0, b.kept - read):,}{usd})"


def text_lines(result: DiffResult, verdict: str | None = None) -> list[str]:
    """Plain lines: the verdict (``verdict`` replaces the words) with the
    cause, where the bytes part, each side's excerpt, and the loss with its
    cost (the failure text of ``assert_prefix_preserved``)."""
    cause, v, t = result.cause, result.view, result.tokens
    if verdict is None:
        kept = cause.kind in PRESERVED and result.cache.lost == 0
        verdict = "prefix preserved" if kept else "prefix not preserved"
    lines = [f"{verdict} ({result.dialect}, {result.model}): {cause.kind}"
             + (f" — {cause.detail}" if cause.detail else "")]
    if v.segment is not None:
        lines.append(f"  segment: {segment_name(result)}   pointer: {v.pointer or '(params)'}")
    lines.append(f"  first divergent byte: {v.first_divergent_byte} in the cache view, "
                 f"{result.raw.first_divergent_byte} in the raw body")
    if v.raw_note:
        lines.append(f"  ({v.raw_note})")
    if v.parent_excerpt is not None:
        lines.append(f"  parent: {v.parent_excerpt}")
    if v.child_excerpt is not None:
        lines.append(f"  child:  {v.child_excerpt}")
    cost = f", {formats.usd(result.cost.usd_lost, 6)} per child request" if result.cost else (
        f"; {result.cost_note}" if result.cost_note else "")
    lines.append(f"  lost: {result.cache.lost:,} cached tokens of {t.child_prompt:,} "
                 f"({t.tokenizer}{', estimated' if t.estimated else ''}; cache model {result.cache.model}){cost}")
    return lines + break_lines(result)


def annotation(result: DiffResult) -> str:
    """One line: the cause, its detail and the JSON pointer where it sits."""
    text = result.cause.kind
    if result.cause.detail:
        text += f": {result.cause.detail}"
    if result.view.pointer:
        text += f" at {result.view.pointer}"
    return text
