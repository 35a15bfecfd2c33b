"""What the report views say about a row: where it diverged, its segment's name,
the figures' provenance, the fix list and the session summary (numbers are
written by :mod:`fidelity.formats`)."""

from __future__ import annotations

from typing import Any

__all__ = ["where", "segment_name", "provenance", "fixes", "session_summary"]


def where(row: dict[str, Any]) -> str:
    d = row["divergence"]
    if d["first_divergent_byte"] is None:
        return "identical"
    seg = d["segment"]
    return f"byte {d['first_divergent_byte']:,} in {segment_name(seg, d.get('pointer'))}"


def segment_name(seg: dict[str, Any], pointer: str | None) -> str:
    """A segment named after where it sits in the body (``messages[3]`` for
    ``/messages/3/content``); ``kind[index]`` when the pointer does not say."""
    if seg["kind"] == "params":
        return "params"
    if seg["kind"] == "tools":  # a tool's index is its place in the tool list (Gemini's declarations too)
        return f"tools[{seg['index']}]"
    parts = (pointer or "").split("/")
    if len(parts) >= 3 and parts[2].isdigit():
        name = f"{parts[1]}[{parts[2]}]"
        head = parts[1].rstrip("s")
        return name if head == seg["kind"].rstrip("s") else f"{name} ({seg['kind']})"
    return f"{seg['kind']}[{seg['index']}]"


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
