"""The report's data: one JSON-ready dict built from a :class:`Score`, read by
every view; floats are rounded here (USD to 6 decimals per child, 4 per 1,000
forks) so that the output is byte-stable."""

from __future__ import annotations

from typing import Any

from ..compose import EXPECTATIONS
from ..gate_rows import REPORT_SCHEMA as SCHEMA
from ..score import Row, Score

__all__ = ["SCHEMA", "to_json", "summary"]


def _usd(value: float | None, places: int = 6) -> float | None:
    return None if value is None else round(value, places)


def _row(r: Row) -> dict[str, Any]:
    cost = None
    if r.cost is not None:
        cost = {
            "usd_per_child": _usd(r.cost.per_child),
            "usd_per_1000": _usd(r.cost.per_1000, 4),
            "usd_cold_per_child": _usd(r.cost.cold_per_child),
            "savings_vs_spawn_per_child": _usd(r.cost.savings_vs_spawn_per_child),
            "savings_vs_spawn_per_1000": _usd(r.cost.savings_vs_spawn_per_1000, 4),
            "price_model": r.cost.price_model,
            "price_source": r.cost.source,
            "price_as_of": r.cost.as_of,
        }
    return {
        "session": r.session,
        "variant": r.variant,
        "provider": r.dialect,
        "provider_family": r.provider,
        "model": r.model,
        "tokenizer": r.tokenizer,
        "tokens_estimated": r.estimated,
        "cache_model": r.cache_model,
        "cache_preserving": r.cache_preserving,
        "expected": r.expected,
        "meets_expectation": r.meets_expectation,
        "tokens": {
            "parent_prompt": r.parent_prompt,
            "child_prompt": r.child_prompt,
            "inherited": r.inherited,
            "inheritable": r.inheritable,
            "reused": r.reused,
            "lost": r.lost,
            "written": r.written,
            "common_prefix": r.common_prefix,
        },
        "divergence": {
            "first_divergent_byte": r.first_divergent_byte,
            "raw_first_divergent_byte": r.raw_first_divergent_byte,
            "region": r.region,
            "segment": None if r.segment is None else {"kind": r.segment[0], "index": r.segment[1],
                                                       "name": r.segment_name},
            "pointer": r.pointer,
            "cause": r.cause,
            "cause_detail": r.cause_detail,
        },
        "regions": {name: count for name, count in r.regions},
        "cost": cost,
        "note": r.note,
        "breaks": [b.to_json() for b in r.breaks],
        "siblings": [
            {"index": s.index, "reused": s.reused, "child_prompt": s.child_prompt,
             "first_divergent_byte": s.first_divergent_byte,
             "segment": None if s.segment is None else {"kind": s.segment[0], "index": s.segment[1]},
             "cause": s.cause}
            for s in r.siblings
        ],
    }


def to_json(score: Score) -> dict[str, Any]:
    """The documented report schema (``fidelity.report/1``)."""
    tokenizers: dict[str, dict[str, Any]] = {}
    for r in score.rows:
        tokenizers.setdefault(r.dialect, {"tokenizer": r.tokenizer, "estimated": r.estimated,
                                          "cache_model": r.cache_model, "model": r.model})
    return {
        "schema": SCHEMA,
        "fixtures": score.fixtures,
        "prices": {"table": score.price_table, "as_of": score.price_as_of},
        "providers": [
            {"provider": p.dialect, "model": p.model, "alt_model": p.alt_model,
             **{k: v for k, v in tokenizers.get(p.dialect, {}).items() if k != "model"}}
            for p in score.providers
        ],
        "sessions": [
            {"name": s.name, "title": s.title, "description": s.description, "file": s.file,
             "messages": len(s.history.messages), "tools": len(s.history.tools),
             "system_sections": len(s.history.system), "directive": s.directive}
            for s in score.sessions
        ],
        "variants": [
            {"name": v.name, "title": v.title, "builder": v.builder, "cache_preserving": v.cache_preserving,
             "expect": v.expect, "expect_meaning": EXPECTATIONS[v.expect], "cause": v.cause,
             "baseline": v.baseline, "fanout": v.fanout, "deltas": [d.op for d in v.deltas],
             "summary": v.summary, "token_effect": v.token_effect, "kv_cache_effect": v.kv_cache_effect}
            for v in score.variants
        ],
        "rows": [_row(r) for r in score.rows],
        "skipped": [{"session": s.session, "variant": s.variant, "provider": s.dialect, "reason": s.reason}
                    for s in score.skipped],
        "harness": [h.to_json() for h in score.harness],
        "summary": summary(score),
    }


def summary(score: Score) -> dict[str, Any]:
    """Headline figures: declared cache-preserving rows that lose tokens,
    rows that miss their expectation."""
    broken = [r for r in score.rows if r.cache_preserving and r.lost > 0]
    missed = [r for r in score.rows if not r.meets_expectation]
    return {
        "rows": len(score.rows),
        "skipped": len(score.skipped),
        "cache_preserving_rows_losing_tokens": len(broken),
        "rows_missing_expectation": len(missed),
        "missing": [f"{r.session}/{r.variant}/{r.dialect}" for r in missed],
    }
