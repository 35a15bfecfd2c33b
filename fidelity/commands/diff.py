"""``fidelity diff PARENT CHILD``: why did the child miss the cache?"""

from __future__ import annotations

import argparse
import datetime as dt
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.text import Text

from .. import formats, pricing
from ..capture import snapshot
from ..diff import DiffResult, views
from ..errors import InputError
from ..pairs.folder import Skipped, compare_pair, summary
from ._console import StdoutConsole

__all__ = ["HELP", "add_arguments", "run"]

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
    parser.add_argument("--endpoint", metavar="URL",
                        help="where the requests went, for caches that depend on it (default: the snapshot's URL, "
                        "else the provider's own API; Anthropic's API does not key on Claude Code's billing block)")
    parser.add_argument("--at", metavar="TIME", type=_time,
                        help="when the child is sent, ISO 8601 (2026-12-01T18:00Z; no zone: UTC), for prices "
                             "that depend on the time of day (DeepSeek's off-peak hours); default: the peak rate")
    parser.add_argument("--json", action="store_true", help="print the documented JSON schema")


def _time(text: str) -> dt.datetime:
    """``--at``: an ISO 8601 time; one without a zone is UTC."""
    try:
        when = dt.datetime.fromisoformat(text.replace("Z", "+00:00").replace("z", "+00:00"))
    except ValueError:
        raise argparse.ArgumentTypeError(f"not an ISO 8601 time: {text!r} (e.g. 2026-12-01T18:00Z)") from None
    return when if when.tzinfo is not None else when.replace(tzinfo=dt.UTC)


def run(args: argparse.Namespace) -> int:
    prices = pricing.load(args.prices)  # the bundled table without --prices: loaded once for every pair
    folder = args.child is None
    skipped: list[Skipped] = []
    notes: list[str] = []

    pairs: list[dict[str, Any]] = []  # for a folder: which request each compared child is paired with, and why

    # one pair at a time (a folder of thousands of snapshots is streamed); in a folder
    # a pair that cannot be compared (an embeddings call) is counted and skipped, never fatal
    def results() -> Iterator[DiffResult]:
        for parent, child, how in _pairs(args):
            res = compare_pair(parent, child, provider=args.provider, model=args.model, prices=prices,
                               lenient=folder, notes=notes, endpoint=args.endpoint, at=args.at, with_breaks=True)
            # where URL, metadata and body disagreed: which dialect was chosen and why
            for note in dict.fromkeys(notes):
                print(f"fidelity diff: note: {note}", file=sys.stderr)
            notes.clear()
            if isinstance(res, Skipped):
                skipped.append(res)
            else:
                pairs.append({"parent": str(parent.path), "child": str(child.path), "how": how})
                yield res

    if args.json:
        payload: Any = [r.to_json() for r in _progress(results(), args)]
        if args.child:
            payload = payload[0]
        else:
            payload = [{**r, "pair": pair} for r, pair in zip(payload, pairs)]
        _check_any(payload, skipped, args)
        sys.stdout.buffer.write(formats.json_doc(payload))
        note = summary(skipped)
        if note:
            print(f"fidelity diff: {note}", file=sys.stderr)
        return 0
    # rich types ``file`` as a nominal IO[str]; _Escaping is a duck-typed text stream
    console = StdoutConsole(file=_Escaping(sys.stdout))  # type: ignore[arg-type]
    if not console.is_terminal:  # a log or a pipe: room for the excerpts on one line, no padding
        console = StdoutConsole(file=_Unpadded(_Escaping(sys.stdout)), width=200)  # type: ignore[arg-type]
    shown = 0
    for result in _progress(results(), args):
        if args.child is None:
            pair = pairs[-1]
            console.print(Text(f"{Path(pair['child']).name} {_HOW[pair['how']]} {Path(pair['parent']).name}",
                               style="bold"))
        console.print(views.console(result))
        shown += 1
    _check_any([None] * shown, skipped, args)
    note = summary(skipped)
    if note:
        console.print(note, markup=False, highlight=False)
    return 0


_HOW = {"reads": "reads from (simulated cache)", "nearest": "reads nothing; longest shared prefix with",
        "parent": "reads nothing; fork parent", "previous": "reads nothing; previous request"}


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
        written: int = self._stream.write(formats.printable(text))
        return written

    def __getattr__(self, name: str) -> Any:
        return getattr(self._stream, name)


class _Unpadded:
    """A text stream that drops the trailing spaces rich pads each line of
    a table with to the console's width: a log or a pipe gets lines as long
    as their text (the terminal keeps rich's own output)."""

    def __init__(self, stream: Any) -> None:
        self._stream = stream
        self._line = ""

    def write(self, text: str) -> int:
        lines = (self._line + text).split("\n")
        self._line = lines.pop()
        if lines:
            self._stream.write("".join(line.rstrip(" ") + "\n" for line in lines))
        return len(text)

    def flush(self) -> None:
        if self._line:
            self._stream.write(self._line.rstrip(" "))
            self._line = ""
        self._stream.flush()

    def __getattr__(self, name: str) -> Any:
        return getattr(self._stream, name)


def _progress(results: Iterator[DiffResult], args: argparse.Namespace) -> Iterator[DiffResult]:
    """A progress bar on stderr for a snapshot folder (only when stderr is a
    terminal, so piped output and CI logs stay clean)."""
    err = Console(stderr=True) if args.child is None else None
    if err is None or not err.is_terminal:
        yield from results
        return
    from rich.progress import track

    total = snapshot.count_pairs(Path(args.parent))
    yield from track(results, total=total, description="diffing pairs", console=err, transient=True)


def _pairs(args: argparse.Namespace) -> Iterator[tuple[snapshot.Loaded, snapshot.Loaded, str]]:
    parent = Path(args.parent)
    if args.child is None:
        if not parent.is_dir():
            raise InputError("give a CHILD file, or a snapshot folder as the only argument", path=parent)
        from ..pairs.by_cache import pairs_by_cache

        found = False
        for pair in pairs_by_cache(parent):
            found = True
            yield pair.parent, pair.child, pair.how
        if not found:
            raise InputError("no pair of requests in this folder", path=parent)
        return
    p_body, p_meta = snapshot.load_body(parent)
    c_body, c_meta = snapshot.load_body(Path(args.child))
    yield snapshot.Loaded(parent, p_body, p_meta), snapshot.Loaded(Path(args.child), c_body, c_meta), "given"
