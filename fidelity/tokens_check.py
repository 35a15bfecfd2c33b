"""Predicted prompt tokens against what providers billed, over recorded traffic.

For every recorded request with reported usage
(:func:`fidelity.traffic.sources.reported`), predict the prompt with
:func:`count_prompt` (the one builder's prompt, as ``replay`` and ``scan``
feed it to the simulator) and compare with the billed prompt; summarise per provider and kind of request (text, tools,
schema, image, pdf, audio) as the median and 95th percentile of
``|predicted - billed| / billed``.

Requests the one rule sets apart (:mod:`fidelity.traffic.apart`: server
tools and state, provider tools, failed requests, non-generation calls,
APIs without a dialect) are left out and counted per provider and reason,
exactly as ``replay`` and ``scan`` leave them out.
"""

from __future__ import annotations

import statistics
from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from . import providers, wire
from .cache.prompts import cache_prompt
from .cache.whole_view import view_of
from .errors import InputError, UnknownName
from .stats import percentile
from .tokens.billed import PromptCount, prompt_media, prompt_tokenizer
from .traffic.exchange import Exchange
from .traffic.sources import reported

__all__ = ["CheckRow", "CheckGroup", "CheckResult", "check", "check_records", "count_prompt", "percentile"]

KINDS = ("text", "tools", "schema", "image", "pdf", "audio", "video")


@dataclass(frozen=True)
class CheckRow:
    path: str
    where: str
    provider: str
    dialect: str
    model: str
    kind: str
    billed: int
    predicted: int
    estimated: bool
    media_estimated: bool

    @property
    def error(self) -> float:
        """``|predicted - billed| / billed``."""
        return abs(self.predicted - self.billed) / self.billed if self.billed else 0.0

    def to_json(self) -> dict[str, Any]:
        return {"path": self.path, "where": self.where, "provider": self.provider, "dialect": self.dialect,
                "model": self.model, "kind": self.kind, "billed": self.billed, "predicted": self.predicted,
                "error": round(self.error, 6), "estimated": self.estimated,
                "media_estimated": self.media_estimated}


@dataclass(frozen=True)
class CheckGroup:
    provider: str
    kind: str
    n: int
    median: float
    p95: float
    estimated: bool

    def to_json(self) -> dict[str, Any]:
        return {"provider": self.provider, "kind": self.kind, "requests": self.n,
                "median": round(self.median, 6), "p95": round(self.p95, 6), "estimated": self.estimated}


@dataclass(frozen=True)
class CheckResult:
    rows: tuple[CheckRow, ...]
    groups: tuple[CheckGroup, ...]
    skipped: dict[str, int] = field(default_factory=dict)
    #: provider -> reason -> requests set apart by the one rule (:mod:`fidelity.traffic.apart`)
    apart: dict[str, dict[str, int]] = field(default_factory=dict)

    def to_json(self, *, rows: bool = True) -> dict[str, Any]:
        out: dict[str, Any] = {"schema": "fidelity.tokens-check/1",
                               "groups": [g.to_json() for g in self.groups],
                               "skipped": dict(sorted(self.skipped.items())), "set_apart": self.apart}
        if rows:
            out["requests"] = [r.to_json() for r in self.rows]
        return out


def _provider_of(family: str | None, dialect: str, model: str) -> str:
    """The row's provider: the URL's (:func:`fidelity.providers.from_url`);
    where no host placed it, a gateway's ``org/model`` name that is not
    OpenAI's is reported under ``openrouter``, not OpenAI."""
    m = model.lower().rsplit("/", 1)[-1]
    if family in (None, "openai") and "/" in model and not m.startswith(("gpt", "o1", "o3", "o4")):
        return "openrouter"
    return family or dialect


def count_prompt(body: bytes, *, dialect: str | None = None, model: str | None = None, url: str | None = None,
                 provider: str | None = None) -> PromptCount:
    """The billed prompt tokens of one request body sent to ``url``: the
    length of the one builder's prompt (:func:`fidelity.cache.prompts.cache_prompt`:
    its segments' billed ids and the reply priming), whether it is an
    estimate, and what it holds (:func:`fidelity.tokens.billed.prompt_media`).
    ``provider``: whose cache serves it where that is not the dialect's
    (the URL's, as ``replay`` passes it)."""
    from .wire.evidence import describe_bytes

    if dialect is None or model is None:
        d_name, _, found_model, _ = describe_bytes(url, body)
        dialect, model = dialect or d_name, model or found_model
    endpoint = providers.placed_url(url)  # the URL places the cache, as in replay
    cp = cache_prompt(body, dialect=dialect, model=model, endpoint=endpoint, provider=provider)
    d = wire.get(cp.dialect)
    tok = prompt_tokenizer(cp.model, d.provider, d.name)
    kinds, media = prompt_media(body, view_of(d, body, endpoint), tok, dialect=d.name, provider=d.provider,
                                model=cp.model)
    estimated = cp.estimated or any(p.estimated for p in media)
    return PromptCount(len(cp.request.tokens), estimated, cp.tokenizer, kinds, media)


def check_records(records: Iterable[Exchange]) -> CheckResult:
    rows: list[CheckRow] = []
    skipped: Counter[str] = Counter()
    apart: Counter[tuple[str, str]] = Counter()
    for rec in records:
        dialect, family, model = rec.dialect, rec.provider, rec.model
        reason = rec.set_apart
        if reason is not None:
            apart[(family or dialect or "unknown", reason)] += 1
        if reason is None and not model:
            reason = "no model named"
        if reason is None and model and rec.response_model and "/" in rec.response_model and "/" not in model:
            # e.g. a cassette recorded through OpenRouter and edited to name an OpenAI model
            reason = "served by another model than the body names (the response says so)"
        if reason is not None:
            skipped[reason] += 1
            continue
        assert dialect is not None and model is not None
        try:
            got = count_prompt(rec.body, dialect=dialect, model=model, url=rec.url, provider=family)
        except (InputError, UnknownName) as exc:
            skipped[f"not countable: {str(exc)[:60]}"] += 1
            continue
        rows.append(CheckRow(rec.path, rec.where, _provider_of(family, dialect, model), dialect, model, got.kind,
                             int(rec.usage["prompt"]) if rec.usage else 0, got.tokens, got.estimated,
                             any(p.estimated for p in got.media)))
    return CheckResult(tuple(rows), _groups(rows), dict(skipped), _by_provider(apart))


def _by_provider(apart: Counter[tuple[str, str]]) -> dict[str, dict[str, int]]:
    out: dict[str, dict[str, int]] = {}
    for (provider, reason), n in sorted(apart.items()):
        out.setdefault(provider, {})[reason] = n
    return out


def _groups(rows: Sequence[CheckRow]) -> tuple[CheckGroup, ...]:
    by: dict[tuple[str, str], list[CheckRow]] = {}
    for r in rows:
        by.setdefault((r.provider, r.kind), []).append(r)
    out = []
    for (provider, kind), rs in sorted(by.items(), key=lambda kv: (kv[0][0], KINDS.index(kv[0][1]) if kv[0][1] in KINDS else 99)):
        errs = [r.error for r in rs]
        out.append(CheckGroup(provider, kind, len(rs), float(statistics.median(errs)), percentile(errs, 95),
                              any(r.estimated for r in rs)))
    return tuple(out)


def check(paths: Sequence[str | Path]) -> CheckResult:
    """:func:`check_records` over every recording under ``paths``."""
    def records() -> Iterable[Exchange]:
        for p in paths:
            yield from reported(p)
    return check_records(records())
