"""Fit the Claude and Gemini estimate constants on recorded usage.

``python -m fidelity.tokens.fit PATH... [--leave-one-out] [--leave-one-repo-out]``
prints, per table of :data:`.framing_estimate.CONSTANTS`, the fitted constants
and the error on the fitted and the held-out tests (a test, all its client
variants together, is held out when the first byte of the SHA-1 of its name
is divisible by 3). Per table, ``billed - what is counted by rule`` is solved
by weighted least squares (``1 / billed``, a small ridge) as ``factor`` times
the o200k tokens at or above a rank plus whole tokens per message, tool,
thinking, schema, tool call, system block, document and request;
:func:`constants` fits every table as committed. The model, the split and what
is left out: ``docs/tokens-billed.md``, "Claude and Gemini: calibrated estimates".
"""

from __future__ import annotations

import argparse
import hashlib
import itertools
import math
import re
import statistics
import sys
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from pathlib import Path

import numpy as np

from .. import formats
from ..errors import FidelityError, InputError
from ..traffic.exchange import Exchange
from ..traffic.sources import reported
from ._pieces import Media, Special
from .billed import _ESTIMATED, _measure, media_in
from .framing_estimate import (
    ADAPT,
    BASE,
    CALL,
    CONSTANTS,
    DOC,
    DOCUMENT,
    MSG,
    SCHEMA,
    SIGNATURE,
    SYSTEM,
    THINK,
    TOOL,
    segment_pieces,
    table_of,
)

__all__ = ["Sample", "samples", "group_of", "repo_of", "held_out", "fit", "fit_trimmed", "predict", "errors", "usable",
           "body_holds_prompt", "leave_one_out", "RANKS", "at_rank", "ranks_of", "unused_from", "constants", "main"]


@dataclass(frozen=True)
class Sample:
    provider: str
    group: str
    model: str
    billed: int
    messages: int
    tools: int
    thinking: int
    base: int
    fixed: int  # media tokens + documented tool prompt
    proxy: int = 0  # o200k_base tokens of the same text
    adaptive: int = 0  # adaptive thinking (1 or 0)
    schema: int = 0  # a structured output (1 or 0)
    repo: str = ""  # the source repository (repo_of)
    calls: int = 0  # tool_use and tool_result blocks
    systems: int = 0  # system segments (blocks)
    media: int = 0  # of ``fixed``, the media parts' tokens (counted by rule, not fitted)
    #: of ``proxy``, the base tokens whose id is at least each of :data:`RANKS`
    late: tuple[int, ...] = ()
    documents: int = 0  # document blocks that are not media (plain text)


#: the ranks :func:`fit` tries: only base ids at or above the rank are stretched
#: (:class:`.calibrated.ScaledTokenizer`); 0 stretches every base token
RANKS = tuple(range(0, 200_000, 10_000))


_VARIANT = re.compile(r"(_async|_stream|_legacy|_with_events_with_(no_)?content|anthropic_beta_|anthropic_|google_|\[.*\])")


def group_of(path: str) -> str:
    """The test a recording belongs to (client variants folded together)."""
    parts = path.replace("\\", "/").split("/")
    tail = parts[len(parts) - parts[::-1].index("cassettes"):] if "cassettes" in parts else parts[-1:]
    if len(tail) > 1 and re.match(r"(anthropic|openai|google)_", tail[-1]):
        name = tail[-2]  # Mirascope: <test>/<provider_model>.yaml
    else:
        name = tail[-1]
    name = name.rsplit(".", 1)[0]
    name = name.split("__")[-1]
    return _VARIANT.sub("", name)


def repo_of(path: str) -> str:
    """The source repository of a recording: the ``owner__name`` folder of a
    corpus built by ``scripts/corpus_build.py`` (``owner/name``), else the
    folder under ``cassettes`` or ``recorded-usage`` (``../shared/real``'s
    layout), else ``""``."""
    parts = path.replace("\\", "/").split("/")
    for part in parts:
        if "__" in part and not part.startswith("__") and "." not in part:
            return part.replace("__", "/", 1)
    return next((parts[i + 1] for i, part in enumerate(parts[:-2]) if part in ("cassettes", "recorded-usage")), "")


def held_out(group: str) -> bool:
    return hashlib.sha1(group.encode()).digest()[0] % 3 == 0


#: one stand-in id per fitted token, so that the pieces count each frame once
_UNIT = {p: dict.fromkeys(table, 1) for p, table in CONSTANTS.items()}


def samples(records: Iterable[Exchange], base: str = "o200k_base") -> list[Sample]:
    """One :class:`Sample` per Claude or Gemini request; ``proxy`` counts
    the text with the tokenizer called ``base``."""
    from .. import wire
    from . import get

    proxy_tok = get(base)
    out = []
    for rec in records:
        dialect, model = rec.dialect, rec.model
        if dialect not in _ESTIMATED or not model or rec.set_apart is not None:
            continue
        provider = _ESTIMATED[dialect]
        segs = wire.get(dialect).cache_view(rec.body)
        counts = dict.fromkeys((k.id for k in (MSG, TOOL, THINK, BASE, DOC, ADAPT, SCHEMA, CALL, SYSTEM, SIGNATURE,
                                               DOCUMENT)), 0)
        proxy = media = 0
        late = [0] * len(RANKS)
        for pieces in segment_pieces(provider, segs, model, media_in, _UNIT):
            for p in pieces:
                if isinstance(p, str):
                    ids = np.sort(np.frombuffer(proxy_tok.ids(p), dtype=np.int64))
                    n = len(ids)
                    proxy += n
                    for i, at in enumerate(np.searchsorted(ids, RANKS).tolist()):
                        late[i] += n - at
                elif isinstance(p, Special):
                    counts[p.id] += 1
                elif isinstance(p, Media):
                    media += _measure(p, provider, model).tokens
        fixed = media + counts[DOC.id] + counts[SIGNATURE.id]  # measured apart, not fitted here
        out.append(Sample(table_of(provider, model), group_of(rec.path), model, int(rec.usage["prompt"]) if rec.usage else 0,
                          counts[MSG.id], counts[TOOL.id], counts[THINK.id], counts[BASE.id], fixed,
                          proxy, counts[ADAPT.id], counts[SCHEMA.id], repo_of(rec.path),
                          counts[CALL.id], counts[SYSTEM.id], media, tuple(late), counts[DOCUMENT.id]))
    return out


#: the ridge per column of :func:`_solved`: next to none on the factor and on
#: frames few requests carry (thinking, schemas, documents), which 1e-3 would hold at 0
_RIDGE = (1e-6, 1e-3, 1e-3, 1e-6, 1e-3, 1e-6, 1e-6, 1e-3, 1e-3, 1e-6)


def _solve(rows: Sequence[Sequence[float]], ys: Sequence[float]) -> list[float]:
    """Least squares by the normal equations, with :data:`_RIDGE` on the diagonal."""
    a, y = np.asarray(rows, dtype=np.float64), np.asarray(ys, dtype=np.float64)
    ridge = np.diag([_RIDGE[i] if i < len(_RIDGE) else 1e-3 for i in range(a.shape[1])])
    return [float(x) for x in np.linalg.solve(a.T @ a + ridge, a.T @ y)]


def at_rank(s: Sample, rank: int) -> Sample:
    """``s`` as the fit sees it when only base ids of ``rank`` or more are
    stretched: ``proxy`` those tokens, the others in ``fixed`` (one token each)."""
    if rank == 0:
        return s
    late = s.late[RANKS.index(rank)]
    return replace(s, proxy=late, fixed=s.fixed + s.proxy - late)


def fit(data: Sequence[Sample], ranks: Sequence[int] = (0,)) -> dict[str, float]:
    """Constants for one table's samples (weighted by 1/billed), at the rank of
    ``ranks`` whose least-squares solution has the least sum of relative
    errors (rank 0 when a sample carries no ``late`` counts), counts whole."""
    if not (data and all(len(s.late) == len(RANKS) for s in data)):
        ranks = (0,)
    best: tuple[float, int] | None = None
    for rank in ranks:
        at = [at_rank(s, rank) for s in data]
        c = _solved(at)
        solved_counts = [c[k] for k in _COUNTS]
        err = sum(abs(s.proxy * c["factor"] + sum(n * x for n, x in zip(_columns(s), solved_counts)) + c["base"] * s.base
                      + s.fixed - s.billed) / max(s.billed, 1) for s in at)
        if best is None or err < best[0] - 1e-12:
            best = (err, rank)
    assert best is not None
    rank = best[1]
    at = [at_rank(s, rank) for s in data]
    solved = _solved(at)
    counts = _whole_counts(at, [max(solved[k], 0) for k in _COUNTS])
    factor, b = _factor_and_base(at, counts)
    return {"factor": round(factor, 3), **dict(zip(_COUNTS, map(float, counts))), "base": float(b),
            "rank": float(rank)}


def _solved(data: Sequence[Sample]) -> dict[str, float]:
    """The weighted least-squares solution, counts not yet whole."""
    rows, ys = [], []
    for s in data:
        w = 1.0 / max(s.billed, 1)
        rows.append([s.proxy * w, s.messages * w, s.tools * w, s.thinking * w, s.base * w, s.adaptive * w,
                     s.schema * w, s.calls * w, s.systems * w, s.documents * w])
        ys.append((s.billed - s.fixed) * w)
    factor, m, t, k, b, a, sc, cl, sy, d = _solve(rows, ys)
    return {"factor": factor, "message": m, "tool": t, "thinking": k, "adaptive": a, "schema": sc, "call": cl,
            "system": sy, "document": d, "base": b}


#: the per-message, per-tool... counts of :func:`fit` other than the per-request one
_COUNTS = ("message", "tool", "thinking", "adaptive", "schema", "call", "system", "document")


def _columns(s: Sample) -> tuple[int, ...]:
    return s.messages, s.tools, s.thinking, s.adaptive, s.schema, s.calls, s.systems, s.documents


def _used(data: Sequence[Sample]) -> list[bool]:
    """Per count of :data:`_COUNTS`: does some sample use it?"""
    return [any(_columns(s)[i] for s in data) for i in range(len(_COUNTS))]


def _factor_and_base(data: Sequence[Sample], counts: Sequence[int]) -> tuple[float, int]:
    """The factor and the whole per-request count that fit ``data`` best with
    the other counts held at ``counts``; a factor under 1 is held at 1 (the
    scaled tokenizer never drops a base id)."""
    rows, ys = [], []
    for s in data:
        w = 1.0 / max(s.billed, 1)
        rows.append((s.proxy * w, s.base * w))
        ys.append((s.billed - s.fixed - sum(n * c for n, c in zip(_columns(s), counts))) * w)
    factor, b = _solve(rows, ys)
    if factor < 1:
        factor = 1.0
        b = _solve([r[1:] for r in rows], [y - r[0] for r, y in zip(rows, ys)])[0]
    base = max(0, round(b))
    if factor > 1:  # the factor again, with the per-request count whole
        factor = max(1.0, _solve([r[:1] for r in rows], [y - base * r[1] for r, y in zip(rows, ys)])[0])
    return factor, base


def _whole_counts(data: Sequence[Sample], solved: Sequence[float]) -> list[int]:
    """Of the whole numbers either side of each solved count (for counts some
    request uses), the combination whose prediction, with the factor and the
    per-request count solved again (:func:`_factor_and_base`), has the least
    sum of relative errors; the first wins a tie (floors first)."""
    used = _used(data)
    choices = [sorted({math.floor(x), math.ceil(x)}) if u else [round(x)] for x, u in zip(solved, used)]
    best: tuple[float, list[int]] | None = None
    for combo in itertools.product(*choices):
        counts = list(combo)
        factor, base = _factor_and_base(data, counts)
        c = {"factor": factor, **dict(zip(_COUNTS, counts)), "base": base}
        err = sum(abs(predict(s, c) - s.billed) / max(s.billed, 1) for s in data)
        if best is None or err < best[0]:
            best = (err, counts)
    assert best is not None
    return best[1]


#: a request the first fit misses by more than this share is left out of the
#: second (:func:`fit_trimmed`)
TRIM = 0.5


def fit_trimmed(data: Sequence[Sample], ranks: Sequence[int] = (0,)) -> dict[str, float]:
    """:func:`fit`, then :func:`fit` again on the requests the first one
    predicts within :data:`TRIM` (a share of the billed prompt), so that a
    part the estimate does not model (a server-side tool) pulls no constant."""
    first = fit(data, ranks)
    kept = [s for s in data if s.billed and abs(predict(s, first) - s.billed) / s.billed < TRIM]
    return fit(kept, ranks) if kept else first


def unused_from(c: dict[str, float], data: Sequence[Sample], parent: dict[str, float]) -> dict[str, float]:
    """``c`` with each count that no sample of ``data`` uses (left at 0 by the
    ridge) taken from ``parent``: the earlier generation's count stands in
    for a frame no recording of this one holds."""
    used = _used(data)
    return {k: (v if k not in _COUNTS or used[_COUNTS.index(k)] else float(parent[k])) for k, v in c.items()}


def constants(data: Sequence[Sample]) -> dict[str, dict[str, float]]:
    """Every table's constants (:data:`.framing_estimate.CONSTANTS` plus each
    ``factor`` and ``rank``) fitted on ``data``, as committed: each table's
    usable samples (:func:`usable`), :func:`fit_trimmed` with
    :func:`ranks_of`, and Opus 4.7's unused counts from Claude's
    (:func:`unused_from`)."""
    out: dict[str, dict[str, float]] = {}
    for table in sorted({s.provider for s in data}):  # anthropic before anthropic-4.7, which reads its rank
        mine = usable(data, table)
        if mine:
            out[table] = fit_trimmed(mine, ranks=ranks_of(table, out))
    if "anthropic-4.7" in out and "anthropic" in out:
        out["anthropic-4.7"] = unused_from(out["anthropic-4.7"], usable(data, "anthropic-4.7"), out["anthropic"])
    return out


def ranks_of(table: str, fitted: Mapping[str, Mapping[str, float]] | None = None) -> tuple[int, ...]:
    """The ranks :func:`fit` tries for a table of ``CONSTANTS``: all of
    :data:`RANKS` for Claude 3 to Opus 4.6; for Opus 4.7 and later (too few
    requests to choose a rank) the rank ``fitted`` holds for ``anthropic``,
    else 0; for Gemini 0 (nothing is stretched)."""
    if table == "anthropic":
        return RANKS
    if table == "anthropic-4.7" and fitted is not None and "anthropic" in fitted:
        return (round(fitted["anthropic"].get("rank", 0)),)
    return (0,)


def predict(s: Sample, c: dict[str, float]) -> float:
    """The estimate of ``s`` under constants ``c`` (its ``rank``: :func:`at_rank`)."""
    s = at_rank(s, round(c.get("rank", 0)))
    return (s.proxy * c["factor"] + sum(round(c[k]) * n for k, n in zip(_COUNTS, _columns(s)))
            + round(c["base"]) * s.base + s.fixed)


#: a request billed more than this many times what its body holds (plus
#: :data:`SLACK` tokens for framing) is left out: its recorded body is not what was sent
MISMATCH = 10
SLACK = 200


def body_holds_prompt(s: Sample) -> bool:
    """False when the billed prompt cannot come from the recorded body."""
    return s.billed <= MISMATCH * (s.proxy + s.fixed) + SLACK


def usable(data: Iterable[Sample], provider: str) -> list[Sample]:
    """The samples of ``provider`` (a table of :data:`.framing_estimate.CONSTANTS`)
    the fit uses: a body that holds the billed prompt, and no media (counted
    by rule: one that misses would move every constant towards its error)."""
    return [s for s in data if s.provider == provider
            and body_holds_prompt(s) and not s.media]


def errors(data: Sequence[Sample], c: dict[str, float]) -> list[float]:
    return [abs(predict(s, c) - s.billed) / s.billed for s in data if s.billed]


def leave_one_out(data: Sequence[Sample], by: str, ranks: Sequence[int] = (0,)) -> dict[str, list[float]]:
    """Per value of the sample attribute ``by`` (``group``: each test;
    ``repo``: each source repository, :func:`repo_of`), in sorted order, its
    errors under constants fitted on all the others: a check that rests on no
    single split, where a constant that holds only where it was fitted shows
    up as a large error."""
    out: dict[str, list[float]] = {}
    for key in sorted({getattr(s, by) for s in data}):
        rest = [s for s in data if getattr(s, by) != key]
        if rest:
            out[key] = errors([s for s in data if getattr(s, by) == key], fit_trimmed(rest, ranks=ranks))
    return out


def _hf_base(path: str) -> str:
    """Register a Hugging Face ``tokenizer.json`` as a base; its name."""
    from . import names, register
    from ._bpe import HFTokenizer

    if not Path(path).is_file():
        raise InputError("no such tokenizer.json", path=path)
    name = f"hf:{path}"
    if name not in names():
        def build() -> HFTokenizer:
            tok = HFTokenizer(name, source=f"tokenizer.json at {path}", path=lambda: path)
            tok.chunk_chars = 1 << 60  # whole texts: no chunk boundary can shift a pre-token
            return tok

        register(name, build)
    return name


def _line(name: str, part: Sequence[Sample], e: Sequence[float]) -> str:
    from ..stats import percentile

    return (f"  {name}: {len(part)} requests, {len({s.group for s in part})} tests, "
            f"median {formats.percent(statistics.median(e), 2)}, p95 {formats.percent(percentile(e, 95), 2)}, "
            f"max {formats.percent(max(e), 2)}")


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python -m fidelity.tokens.fit",
        description="Fit the Claude and Gemini estimate constants (factor per base token, tokens per message, "
                    "tool, thinking and request) on recorded usage; print them with the error on the fitted "
                    "tests and on the held-out ones (docs/tokens-billed.md).")
    parser.add_argument("paths", nargs="+", metavar="PATH",
                        help="recordings with usage, or folders searched recursively "
                             "(e.g. ../shared/real/recorded-usage ../shared/real/cassettes)")
    parser.add_argument("--base", default="o200k_base", metavar="TOKENIZER",
                        help="registered tokenizer that counts the text (default: o200k_base)")
    parser.add_argument("--tokenizer-json", metavar="FILE",
                        help="count the text with this Hugging Face tokenizer.json instead of --base "
                             "(the Claude-2 comparison in docs/tokens-billed.md)")
    parser.add_argument("--leave-one-out", action="store_true",
                        help="also print the errors of each test under constants fitted on all other tests")
    parser.add_argument("--leave-one-repo-out", action="store_true",
                        help="also print each source repository's errors under constants fitted on the others")
    parser.add_argument("--debug", action="store_true", help="show tracebacks on errors")
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    try:
        base = _hf_base(args.tokenizer_json) if args.tokenizer_json else args.base
        data: list[Sample] = []
        for root in args.paths:
            data.extend(samples(reported(root), base))
    except FidelityError as exc:
        if args.debug:
            raise
        print(f"fidelity.tokens.fit: {exc}", file=sys.stderr)
        return 2
    fitted: dict[str, dict[str, float]] = {}
    for provider in sorted({s.provider for s in data}):  # anthropic before anthropic-4.7, which reads its rank
        mine = usable(data, provider)
        left = sum(s.provider == provider for s in data) - len(mine)
        train = [s for s in mine if not held_out(s.group)]
        test = [s for s in mine if held_out(s.group)]
        if not train:
            continue
        ranks = ranks_of(provider, fitted)
        c = fitted[provider] = fit_trimmed(train, ranks=ranks)
        print(provider, c, f"(base {base}; {left} requests left out: media, bodies without the prompt)")
        for name, part in (("fitted", train), ("held out", test)):
            e = errors(part, c)
            if e:
                print(_line(name, part, e))
        if args.leave_one_out:
            e = [x for part in leave_one_out(mine, "group", ranks).values() for x in part]
            if e:
                print(_line("leave one test out", mine, e))
        if args.leave_one_repo_out:
            for repo, e in leave_one_out(mine, "repo", ranks).items():
                if e:
                    print(_line(f"leave {repo or '(no repository)'} out", [s for s in mine if s.repo == repo], e))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
