"""``fidelity diff PARENT CHILD``: why did the child miss the cache?"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any, Iterator

import orjson
from rich.console import Console, Group
from rich.table import Table
from rich.text import Text

from .. import pricing
from ..capture import snapshot
from ..diff._compare import DiffResult
from ..diff.folder import Skipped, compare_pair, summary
from ..errors import InputError

HELP = ("Compare a parent and a child request body (JSON files or request snapshots): "
        "first divergent byte, cause, lost cached tokens and their cost.")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("parent", help="parent body or snapshot file; or a snapshot folder (then omit CHILD)")
    parser.add_argument("child", nargs="?", help="child body or snapshot file")
    parser.add_argument("--provider", help="wire dialect (default: detected from the URL, snapshot metadata, "
                        "then the body)")
    parser.add_argument("--model", help="model for tokenizer and prices (default: from the body, else the "
                        "snapshot metadata, else the URL)")
    parser.add_argument("--prices", metavar="FILE",
                        help="LiteLLM model_prices_and_context_window.json instead of the bundled table")
    parser.add_argument("--json", action="store_true", help="print the documented JSON schema")


def run(args: argparse.Namespace) -> int:
    prices = pricing.load(args.prices) if args.prices else None
    folder = args.child is None
    skipped: list[Skipped] = []
    notes: list[str] = []

    # One pair at a time: a folder of thousands of snapshots is streamed
    # (bodies are read, compared and dropped; only the small results stay).
    # In a folder, a pair that cannot be compared (an embeddings call, an
    # unsupported API) is counted and skipped, never fatal.
    def results() -> Iterator[DiffResult]:
        for parent, child in _pairs(args):
            res = compare_pair(parent, child, provider=args.provider, model=args.model, prices=prices,
                               lenient=folder, notes=notes)
            # where URL, metadata and body disagreed: which dialect was chosen and why
            for note in dict.fromkeys(notes):
                print(f"fidelity diff: note: {note}", file=sys.stderr)
            notes.clear()
            if isinstance(res, Skipped):
                skipped.append(res)
            else:
                yield res

    if args.json:
        payload: Any = [r.to_json() for r in _progress(results(), args)]
        if args.child:
            payload = payload[0]
        _check_any(payload, skipped, args)
        try:
            data = orjson.dumps(payload, option=orjson.OPT_INDENT_2)
        except TypeError:  # a lone surrogate (from a "\ud800" escape in a body): escape it, lose nothing
            data = json.dumps(payload, indent=2, ensure_ascii=True).encode("ascii")
        sys.stdout.buffer.write(data + b"\n")
        note = summary(skipped)
        if note:
            print(f"fidelity diff: {note}", file=sys.stderr)
        return 0
    console = Console(file=_Escaping(sys.stdout))
    if not console.is_terminal:  # a log or a pipe: room for the excerpts on one line
        console = Console(file=_Escaping(sys.stdout), width=200)
    shown = 0
    for result in _progress(results(), args):
        console.print(render(result))
        shown += 1
    _check_any([None] * shown, skipped, args)
    note = summary(skipped)
    if note:
        console.print(note, markup=False, highlight=False)
    return 0


def _check_any(compared: Any, skipped: list[Skipped], args: argparse.Namespace) -> None:
    """A folder where nothing could be compared is bad input (exit 2)."""
    if not compared and skipped:
        raise InputError(f"no pair could be compared; {summary(skipped)}", path=args.parent)


class _Escaping:
    """A text stream that writes a lone surrogate as ``\\ud800`` instead of
    failing with ``UnicodeEncodeError`` (body strings may hold one)."""

    def __init__(self, stream: Any) -> None:
        self._stream = stream

    def write(self, text: str) -> int:
        return self._stream.write(text.encode("utf-8", "backslashreplace").decode("utf-8"))

    def __getattr__(self, name: str) -> Any:
        return getattr(self._stream, name)


def _progress(results: Iterator[DiffResult], args: argparse.Namespace) -> Iterator[DiffResult]:
    """A progress bar on stderr for a snapshot folder (only when stderr is a
    terminal, so piped output and CI logs stay clean)."""
    if args.child is not None:
        yield from results
        return
    err = Console(stderr=True)
    if not err.is_terminal:
        yield from results
        return
    from rich.progress import track

    total = snapshot.count_pairs(Path(args.parent))
    yield from track(results, total=total, description="diffing pairs", console=err, transient=True)


def _pairs(args: argparse.Namespace) -> Iterator[tuple[snapshot.Loaded, snapshot.Loaded]]:
    parent = Path(args.parent)
    if args.child is None:
        if not parent.is_dir():
            raise InputError("give a CHILD file, or a snapshot folder as the only argument", path=parent)
        found = False
        for pair in snapshot.pairs_in_folder(parent):
            found = True
            yield pair
        if not found:
            raise InputError("no pair of requests in this folder", path=parent)
        return
    p_body, p_meta = snapshot.load_body(parent)
    c_body, c_meta = snapshot.load_body(Path(args.child))
    yield snapshot.Loaded(parent, p_body, p_meta), snapshot.Loaded(Path(args.child), c_body, c_meta)


def render(result: DiffResult) -> Group:
    """A rich view of one comparison."""
    j = result.to_json()
    cause = result.cause
    head = Text()
    if cause.kind in ("identical", "appended_only"):
        head.append("✔ prefix preserved", style="bold green")
    elif result.cache.lost == 0:
        head.append("✔ no cached token lost (the bodies diverge past what the cache can serve)", style="bold green")
    else:
        head.append("✘ prefix broken", style="bold red")
    head.append(f"  {cause.kind}")
    if cause.detail:
        head.append(f": {cause.detail}", style="yellow")
    table = Table(show_header=False, box=None, pad_edge=False)
    table.add_column(style="bold")
    table.add_column()
    view = j["cache_view"]
    raw = j["raw"]
    table.add_row("dialect", f"{result.dialect} ({result.provider}), model {result.model}")
    table.add_row("raw bytes", "identical" if raw["identical"] else
                  f"first divergent byte {raw['first_divergent_byte']} of {raw['parent_bytes']} / {raw['child_bytes']}")
    if view["segment"]:
        table.add_row("cache view", f"first divergent byte {view['first_divergent_byte']}, "
                      f"segment {view['segment']['kind']}[{view['segment']['index']}], pointer {view['pointer']!r}")
        table.add_row("parent", Text(view["parent_excerpt"] or ""))
        table.add_row("child", Text(view["child_excerpt"] or ""))
    else:
        table.add_row("cache view", "identical")
    t = result.tokens
    table.add_row("tokens", f"common prefix {t.common_prefix:,} · parent {t.parent_prompt:,} · child "
                  f"{t.child_prompt:,}  [{t.tokenizer}{', estimated' if t.estimated else ''}]")
    c = result.cache
    table.add_row("cache", f"predicted cached {c.predicted_cached:,} · lost {c.lost:,}  [{c.model}]")
    if result.cost:
        table.add_row("cost", f"${result.cost.usd_lost:.6f} lost per child request "
                      f"(${result.cost.usd_lost * 1000:.4f} per 1,000)  "
                      f"[{result.cost.price_table}, {result.cost.as_of}, {result.cost.price_model}]")
    elif result.cost_note:
        table.add_row("cost", result.cost_note)
    return Group(head, table)
