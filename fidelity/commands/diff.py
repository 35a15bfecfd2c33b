"""``fidelity diff PARENT CHILD``: why did the child miss the cache?"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any, Iterator

from rich.console import Console, Group
from rich.table import Table
from rich.text import Text

from .. import pricing
from ..capture import snapshot
from ..diff._compare import DiffResult, compare
from ..errors import InputError
from ._console import StdoutConsole

HELP = ("Compare a parent and a child request body (JSON files or request snapshots): "
        "first divergent byte, cause, lost cached tokens and their cost.")


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("parent", help="parent body or snapshot file; or a snapshot folder (then omit CHILD)")
    parser.add_argument("child", nargs="?", help="child body or snapshot file")
    parser.add_argument("--provider", help="wire dialect (default: detected from the body)")
    parser.add_argument("--model", help="model for tokenizer and prices (default: from the body)")
    parser.add_argument("--prices", metavar="FILE",
                        help="LiteLLM model_prices_and_context_window.json instead of the bundled table")
    parser.add_argument("--json", action="store_true", help="print the documented JSON schema")


def run(args: argparse.Namespace) -> int:
    prices = pricing.load(args.prices) if args.prices else None
    # One pair at a time: a folder of thousands of snapshots is streamed
    # (bodies are read, compared and dropped; only the small results stay).
    results = (compare(p_body, c_body, dialect=args.provider or p_meta_provider, model=args.model,
                       prices=prices, parent_path=p_name, child_path=c_name)
               for p_name, p_body, c_name, c_body, p_meta_provider in _pairs(args))
    if args.json:
        payload: Any = [r.to_json() for r in _progress(results, args)]
        if args.child:
            payload = payload[0]
        import orjson  # only the JSON output needs it

        try:
            data = orjson.dumps(payload, option=orjson.OPT_INDENT_2)
        except TypeError:  # a lone surrogate (from a "\ud800" escape in a body): escape it, lose nothing
            data = json.dumps(payload, indent=2, ensure_ascii=True).encode("ascii")
        sys.stdout.buffer.write(data + b"\n")
        return 0
    console = StdoutConsole(file=_Escaping(sys.stdout))
    if not console.is_terminal:  # a log or a pipe: room for the excerpts on one line
        console = StdoutConsole(file=_Escaping(sys.stdout), width=200)
    for result in _progress(results, args):
        console.print(render(result))
    return 0


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


def _pairs(args: argparse.Namespace) -> Iterator[tuple[str, bytes, str, bytes, str | None]]:
    parent = Path(args.parent)
    if args.child is None:
        if not parent.is_dir():
            raise InputError("give a CHILD file, or a snapshot folder as the only argument", path=parent)
        found = False
        for (p_path, p_body, p_meta), (c_path, c_body, _c_meta) in snapshot.pairs_in_folder(parent):
            found = True
            yield str(p_path), p_body, str(c_path), c_body, _provider(p_meta)
        if not found:
            raise InputError("no pair of requests in this folder", path=parent)
        return
    p_body, p_meta = snapshot.load_body(parent)
    c_body, _ = snapshot.load_body(Path(args.child))
    yield str(parent), p_body, str(args.child), c_body, _provider(p_meta)


def _provider(meta: Any) -> str | None:
    return getattr(meta, "provider", None) if meta is not None else None


def render(result: DiffResult) -> Group:
    """A rich view of one comparison."""
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
    # read the fields, not to_json(): the JSON view computes the deepdiff summary
    view, raw = result.view, result.raw
    table.add_row("dialect", f"{result.dialect} ({result.provider}), model {result.model}")
    table.add_row("raw bytes", "identical" if raw.identical else
                  f"first divergent byte {raw.first_divergent_byte} of {raw.parent_size} / {raw.child_size}")
    if view.segment:
        table.add_row("cache view", f"first divergent byte {view.first_divergent_byte}, "
                      f"segment {view.segment[0]}[{view.segment[1]}], pointer {view.pointer!r}")
        table.add_row("parent", Text(view.parent_excerpt or ""))
        table.add_row("child", Text(view.child_excerpt or ""))
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
