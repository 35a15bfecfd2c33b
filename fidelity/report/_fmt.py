"""Number formatting shared by the text views (deterministic, locale-free)."""

from __future__ import annotations

from typing import Any

__all__ = ["tokens", "usd", "where", "provenance"]


def tokens(n: int | None) -> str:
    return "–" if n is None else f"{n:,}"


def usd(x: float | None, places: int = 4) -> str:
    if x is None:
        return "–"
    sign = "-" if x < 0 else ""
    return f"{sign}${abs(x):,.{places}f}"


def where(row: dict[str, Any]) -> str:
    d = row["divergence"]
    if d["first_divergent_byte"] is None:
        return "identical"
    seg = d["segment"]
    return f"byte {d['first_divergent_byte']:,} in {seg['kind']}[{seg['index']}]"


def provenance(data: dict[str, Any]) -> list[str]:
    """One line per provider: model, tokenizer (real or estimate), cache model."""
    out = []
    for p in data["providers"]:
        tok = p.get("tokenizer", "?")
        kind = "estimate" if p.get("estimated") else "real tokenizer"
        out.append(f"{p['provider']}: model {p['model']} (route change: {p['alt_model']}), "
                   f"tokens {tok} ({kind}), cache model {p.get('cache_model', '?')}")
    return out
