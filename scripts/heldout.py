"""Figures on recordings split by source repository: fit set, held-out set, ../shared/real.

    python3 scripts/heldout.py CORPUS_DIR [--split fit=OWNER/NAME,...] [--real DIR]
                               [--out docs/corpus/heldout.md] [--date YYYY-MM-DD]
    python3 scripts/heldout.py CORPUS_DIR --worst-fit PROVIDER/KIND [--top N]

``CORPUS_DIR`` holds one folder per source repository, ``<owner>__<name>``
(as ``scripts/corpus_build.py`` writes it). The repositories named in
``--split fit=`` form the fit set, every other one the held-out set (no
repository is in both); the default assignment is :data:`FIT` (docs/corpus/SOURCES.md).

Every recording is read through the one reader (:func:`fidelity.traffic.sources.read`).
Figures are over DISTINCT requests: a request body sent to the same URL
again (one test replayed in many cassettes) counts once, and a recording
whose requests are all the same as an earlier one's is replayed once.

* detection: share of generation requests whose provider dialect is known;
* scored / set apart (by reason): the decision ``tokens-check`` makes
  (:func:`fidelity.tokens_check.check_records`) on requests with a reported prompt;
* prompt-token error median / p95 per provider and kind: the groups of
  :func:`~fidelity.tokens_check.check_records`, the function ``tokens-check`` uses;
* cache reads exact per provider: :func:`fidelity.replay.summarize` over
  :func:`fidelity.replay.replay_recording`, the functions ``replay`` uses.

``--worst-fit openai/tools`` lists instead the worst rows of one provider
and kind on the FIT side only (file, model, reported vs counted), to study
a failure class without looking at the held-out rows one by one.

The Markdown is deterministic: the same recordings and date give the same bytes.
"""

from __future__ import annotations

import argparse
import datetime
import hashlib
import os
import sys
import tempfile
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from fidelity.errors import FidelityError
from fidelity.replay import replay_recording, summarize
from fidelity.tokens_check import KINDS, check_records
from fidelity.traffic.exchange import Exchange
from fidelity.traffic.sources import READ_KINDS, list_sources, read

#: the fit set's repositories (about half; every other repository is held out)
FIT = ("alexrudall/anthropic", "pydantic/pydantic-ai", "simonw/llm-claude-3", "simonw/llm-openai-plugin")

NOT_GENERATION = "not a generation request"
UNDETECTED = ("unknown provider",)


@dataclass
class Figures:
    """What one set of repositories measures."""

    repos: tuple[str, ...]
    files: int = 0
    unreadable: int = 0
    requests: int = 0
    distinct: int = 0
    generation: int = 0
    detected: int = 0
    with_usage: int = 0
    scored: int = 0
    set_apart: Counter[str] = field(default_factory=Counter)
    #: (provider, kind) -> (requests, median, p95)
    tokens: dict[tuple[str, str], tuple[int, float, float]] = field(default_factory=dict)
    #: provider -> (scored, read exact share)
    reads: dict[str, tuple[int, float | None]] = field(default_factory=dict)


def repo_dirs(corpus: Path) -> dict[str, Path]:
    """``owner/name`` -> its folder, for every ``owner__name`` folder under ``corpus``."""
    return {d.name.replace("__", "/", 1): d for d in sorted(corpus.iterdir()) if d.is_dir() and "__" in d.name}


def split(repos: Iterable[str], fit: Sequence[str]) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """``(fit, held_out)``: the repositories named in ``fit`` and all others, each sorted."""
    chosen = {f.lower() for f in fit}
    names = sorted(set(repos))
    return (tuple(r for r in names if r.lower() in chosen), tuple(r for r in names if r.lower() not in chosen))


def recordings(folders: Iterable[Path]) -> tuple[list[list[Exchange]], int, int]:
    """Every recording under ``folders`` (path order), the files read and the files that could not be."""
    out: list[list[Exchange]] = []
    files = bad = 0
    for folder in folders:
        for src in list_sources(folder):
            if src.kind not in READ_KINDS:
                continue
            files += 1
            try:
                got = read(src)
            except (FidelityError, ValueError, RecursionError):
                bad += 1
                continue
            if got:
                out.append(got)
    return out, files, bad


def _key(ex: Exchange) -> bytes:
    return hashlib.sha256((ex.url or "").encode() + b"\0" + ex.body).digest()


def distinct(recs: Iterable[Sequence[Exchange]]) -> list[Exchange]:
    """Each request once: the first exchange of every (URL, body) pair, in reading order."""
    seen: set[bytes] = set()
    out = []
    for rec in recs:
        for ex in rec:
            k = _key(ex)
            if k not in seen:
                seen.add(k)
                out.append(ex)
    return out


def distinct_recordings(recs: Iterable[Sequence[Exchange]]) -> list[Sequence[Exchange]]:
    """Each recording once: a recording whose requests repeat an earlier one's is dropped."""
    seen: set[bytes] = set()
    out = []
    for rec in recs:
        k = hashlib.sha256(b"".join(_key(ex) for ex in rec)).digest()
        if k not in seen:
            seen.add(k)
            out.append(rec)
    return out


def _reported_prompt(ex: Exchange) -> bool:
    # the filter of fidelity.tokens.recorded.iter_recorded, which takes a folder, not exchanges
    return ex.usage is not None and isinstance(ex.usage.get("prompt"), int)


def measure(folders: Mapping[str, Path]) -> Figures:
    """The figures of the repositories ``folders`` (name -> folder) taken together."""
    recs, files, bad = recordings(folders[r] for r in sorted(folders))
    fig = Figures(tuple(sorted(folders)), files=files, unreadable=bad, requests=sum(len(r) for r in recs))
    uniq = distinct(recs)
    fig.distinct = len(uniq)
    gen = [ex for ex in uniq if not (ex.skip or "").startswith(NOT_GENERATION)]
    fig.generation = len(gen)
    fig.detected = sum(not (ex.skip or "").startswith(UNDETECTED) for ex in gen)
    billed = [ex for ex in gen if _reported_prompt(ex)]
    fig.with_usage = len(billed)
    result = check_records(billed)
    fig.scored = len(result.rows)
    fig.set_apart = Counter(result.skipped)
    fig.tokens = {(g.provider, g.kind): (g.n, g.median, g.p95) for g in result.groups}
    rows = []
    for rec in distinct_recordings(recs):
        rows.extend(replay_recording(rec))
    for prov, s in summarize(rows).items():
        if s["scored"]:
            fig.reads[prov] = (s["scored"], s["read_exact"])
    return fig


# --------------------------------------------------------------------------- Markdown


def _pct(x: float | None) -> str:
    return "–" if x is None else f"{100 * x:.1f}%"


def _share(n: int, d: int) -> str:
    return "–" if not d else f"{100 * n / d:.1f}% ({n}/{d})"


def _kind_order(pk: tuple[str, str]) -> tuple[str, int, str]:
    return (pk[0], KINDS.index(pk[1]) if pk[1] in KINDS else len(KINDS), pk[1])


def table(columns: Mapping[str, Figures]) -> list[str]:
    """Markdown table lines: one row per figure, one column per set."""
    names = list(columns)
    figs = [columns[n] for n in names]
    lines = ["| figure | " + " | ".join(names) + " |", "|---|" + "---|" * len(names)]

    def row(label: str, cells: Iterable[str]) -> None:
        lines.append(f"| {label} | " + " | ".join(cells) + " |")

    row("source repositories", (str(len(f.repos)) for f in figs))
    row("recording files (unreadable)", (f"{f.files} ({f.unreadable})" for f in figs))
    row("requests / distinct", (f"{f.requests} / {f.distinct}" for f in figs))
    row("detection (generation requests with a dialect)", (_share(f.detected, f.generation) for f in figs))
    row("non-generation requests (left out)", (str(f.distinct - f.generation) for f in figs))
    row("generation requests with reported prompt", (str(f.with_usage) for f in figs))
    row("scored by tokens-check", (_share(f.scored, f.with_usage) for f in figs))
    reasons = sorted({r for f in figs for r in f.set_apart}, key=lambda r: (-sum(f.set_apart[r] for f in figs), r))
    for reason in reasons:
        row(f"set apart: {reason.replace('|', '/')}", (str(f.set_apart.get(reason, 0)) for f in figs))
    for pk in sorted({k for f in figs for k in f.tokens}, key=_kind_order):
        cells = []
        for f in figs:
            t = f.tokens.get(pk)
            cells.append("–" if t is None else f"{_pct(t[1])} / {_pct(t[2])} (n={t[0]})")
        row(f"prompt tokens {pk[0]} {pk[1]}: median / p95", cells)
    for prov in sorted({p for f in figs for p in f.reads}):
        cells = []
        for f in figs:
            r = f.reads.get(prov)
            cells.append("–" if r is None else f"{_pct(r[1])} (n={r[0]})")
        row(f"cache reads exact ({prov}, replay)", cells)
    return lines


def render(columns: Mapping[str, Figures], *, command: str, date: str) -> str:
    lines = ["# Held-out figures", "", f"Command: `{command}`  ", f"Date: {date}", "",
             "Medians over distinct requests (a body sent to the same URL again counts once).", ""]
    lines += table(columns)
    lines.append("")
    for name, f in columns.items():
        lines.append(f"- {name}: " + (", ".join(f.repos) or "none"))
    return "\n".join(lines) + "\n"


def _write(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=".tmp-")
    with os.fdopen(fd, "w", encoding="utf-8", newline="\n") as fh:
        fh.write(text)
    os.replace(tmp, path)


def run(corpus: Path, fit: Sequence[str], real: Path | None) -> dict[str, Figures]:
    """The columns: fit, held out, and ``real`` (when given and present)."""
    dirs = repo_dirs(corpus)
    fit_names, held_names = split(dirs, fit)
    cols = {"fit": measure({n: dirs[n] for n in fit_names}),
            "held out": measure({n: dirs[n] for n in held_names})}
    if real is not None and real.is_dir():
        cols["../shared/real"] = measure({"shared/real": real})
    return cols


def worst_fit_rows(corpus: Path, fit: Sequence[str], provider: str, kind: str, top: int) -> list[str]:
    """Lines naming the ``top`` worst rows of ``provider``/``kind`` among the
    FIT repositories' distinct requests (held-out rows are never listed):
    relative error, reported and counted prompt, model, file and place."""
    dirs = repo_dirs(corpus)
    fit_names, _ = split(dirs, fit)
    recs, _, _ = recordings(dirs[n] for n in fit_names)
    gen = [ex for ex in distinct(recs) if not (ex.skip or "").startswith(NOT_GENERATION) and _reported_prompt(ex)]
    rows = [r for r in check_records(gen).rows if r.provider == provider and r.kind == kind]
    rows.sort(key=lambda r: (-r.error, r.path, r.where))
    lines = [f"# worst fit rows: {provider} {kind} ({len(rows)} rows)",
             "error | reported | counted | model | file | where"]
    for r in rows[:top]:
        est = " (estimated)" if r.estimated else ""
        lines.append(f"{_pct(r.error)} | {r.billed} | {r.predicted}{est} | {r.model} | {r.path} | {r.where}")
    return lines


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("corpus", type=Path)
    ap.add_argument("--split", default="fit=" + ",".join(FIT), help="fit=OWNER/NAME,... (all others held out)")
    ap.add_argument("--real", type=Path, default=Path("../shared/real"))
    ap.add_argument("--no-real", action="store_true")
    ap.add_argument("--out", type=Path)
    ap.add_argument("--date", default=datetime.date.today().isoformat())
    ap.add_argument("--debug", action="store_true")
    ap.add_argument("--worst-fit", metavar="PROVIDER/KIND",
                    help="list the worst rows of one provider and kind, fit side only")
    ap.add_argument("--top", type=int, default=20)
    args = ap.parse_args(argv)
    if not args.split.startswith("fit="):
        print(f"heldout: --split {args.split!r}: expected fit=OWNER/NAME,...", file=sys.stderr)
        return 2
    if not args.corpus.is_dir():
        print(f"heldout: {args.corpus}: no such folder", file=sys.stderr)
        return 2
    fit = [s for s in args.split[4:].split(",") if s]
    if args.worst_fit is not None:
        prov, sep, kind = args.worst_fit.partition("/")
        if not sep or not prov or not kind:
            print(f"heldout: --worst-fit {args.worst_fit!r}: expected PROVIDER/KIND", file=sys.stderr)
            return 2
        try:
            lines = worst_fit_rows(args.corpus, fit, prov, kind, args.top)
        except (FidelityError, OSError) as exc:
            if args.debug:
                raise
            print(f"heldout: {args.corpus}: {exc}", file=sys.stderr)
            return 2
        sys.stdout.write("\n".join(lines) + "\n")
        return 0
    try:
        cols = run(args.corpus, fit, None if args.no_real else args.real)
    except (FidelityError, OSError) as exc:
        if args.debug:
            raise
        print(f"heldout: {args.corpus}: {exc}", file=sys.stderr)
        return 2
    command = "python3 scripts/heldout.py " + " ".join(argv if argv is not None else sys.argv[1:])
    text = render(cols, command=command, date=args.date)
    if args.out:
        _write(args.out, text)
    else:
        sys.stdout.write(text)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
