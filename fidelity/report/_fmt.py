"""What the report views say about a row: where it diverged (in its segment, as the diff names it),
the figures' provenance, the fix list and the session summary (numbers are
written by :mod:`fidelity.formats`)."""

from __future__ import annotations

from typing import Any

__all__ = ["where", "provenance", "fixes", "session_summary"]


def where(row: dict[str, Any]) -> str:
    """Where a row's cache views part: ``byte N in <segment name>`` (the name
    the diff gave it, :func:`fidelity.diff.views.name_segment`), or ``identical``."""
    d = row["divergence"]
    if d["first_divergent_byte"] is None:
        return "identical"
    return f"byte {d['first_divergent_byte']:,} in {d['segment']['name']}"


def provenance(data: dict[str, Any]) -> list[str]:
    """One line per provider: model, tokenizer (real or estimate), cache model."""
    out = []
    for p in data["providers"]:
        tok = p.get("tokenizer", "?")
        kind = "estimate" if p.get("estimated") else "real tokenizer"
        out.append(f"{p['provider']}: model {p['model']} (route change: {p['alt_model']}), "
                   f"tokens {tok} ({kind}), cache model {p.get('cache_model', '?')}")
    return out


def fixes(row: dict[str, Any]) -> list[str]:
    """A report row's fix list, one line per break in cache order (empty without one)."""
    out = []
    for b in row.get("breaks") or ():
        kept = "–" if b["kept_if_fixed"] is None else f"{b['kept_if_fixed']:,}"
        out.append(f"{b['detail']} at {b['pointer']} → keeps {kept}")
    return out


def session_summary(data: dict[str, Any]) -> list[dict[str, Any]]:
    """Per session, the report's summary table: rows, rows losing tokens, declared
    cache-preserving ones losing tokens, rows missing their expectation, tokens lost."""
    out = []
    for sess in data["sessions"]:
        rows = [r for r in data["rows"] if r["session"] == sess["name"]]
        out.append({"session": sess["name"], "rows": len(rows),
                    "losing": sum(1 for r in rows if r["tokens"]["lost"] > 0),
                    "preserving_losing": sum(1 for r in rows if r["cache_preserving"] and r["tokens"]["lost"] > 0),
                    "missing": sum(1 for r in rows if not r["meets_expectation"]),
                    "lost": sum(r["tokens"]["lost"] for r in rows)})
    return out
