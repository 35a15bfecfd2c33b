"""List prices per model (the bundled, sourced and dated table, or LiteLLM's
price file; USD per million tokens) and the one cost function every figure
goes through: :func:`prompt_cost` and :func:`lost_cost` give ``None`` for an
unknown price, never 0. Rules (peak rates without a time, prompt-length
tiers, a missing cache-write price): docs/tokens-cache-prices.md (with examples).
"""

from __future__ import annotations

import datetime as _dt
import re
from dataclasses import asdict, dataclass
from importlib import resources
from pathlib import Path
from typing import Any

from . import jsonio, providers
from .errors import InputError, UnknownName

__all__ = ["Price", "Rates", "PriceTable", "load", "parse_bundled", "parse_litellm", "prompt_cost", "lost_cost",
           "no_price_note"]


# A model name's tail that does not change the price: a date, "latest",
# "preview" with a date, an "exp" tag, a version tag.
_NEUTRAL_TAIL = re.compile(r"^(?:\d[\d-]*|latest|preview(?:-[\d-]+)?|exp(?:-[\d-]+)?|v\d+(?:\.\d+)*)$")


@dataclass(frozen=True)
class Rates:
    """USD per million tokens: one set of rates (``None``: not given)."""

    input: float
    cache_read: float | None
    cache_write: float | None
    output: float


@dataclass(frozen=True)
class Price:
    """USD per million tokens for one model (cache prices ``None`` when not
    given). ``off_peak`` applies outside ``peak_hours_utc`` (minutes after
    midnight UTC); ``tiers``: ``(up_to_prompt_tokens, rates)``, the last
    unbounded; ``vendor`` / ``key``: LiteLLM's provider and entry name."""

    provider: str
    model: str
    input: float
    cache_read: float | None
    cache_write: float | None
    output: float
    source: str
    as_of: str
    note: str = ""
    off_peak: Rates | None = None
    peak_hours_utc: tuple[tuple[int, int], ...] = ()
    tiers: tuple[tuple[int | None, Rates], ...] = ()
    vendor: str = ""
    key: str = ""

    def rates(self, *, prompt_tokens: int | None = None, at: _dt.datetime | None = None) -> Rates:
        """The rates for a prompt of ``prompt_tokens`` sent at ``at`` (an
        aware datetime; naive means UTC). Without a time: the peak rates."""
        if self.tiers and prompt_tokens is not None:
            for up_to, tier in self.tiers:
                if up_to is None or prompt_tokens <= up_to:
                    return tier
            return self.tiers[-1][1]
        if self.off_peak is not None and at is not None and not self.is_peak(at):
            return self.off_peak
        return Rates(self.input, self.cache_read, self.cache_write, self.output)

    def is_peak(self, at: _dt.datetime) -> bool:
        """Whether ``at`` falls in a peak window (always, for a row without any)."""
        if not self.peak_hours_utc:
            return True
        utc = at.astimezone(_dt.UTC) if at.tzinfo else at
        minute = utc.hour * 60 + utc.minute
        return any(start <= minute < end for start, end in self.peak_hours_utc)


def prompt_cost(price: Price | None, *, cached: int, written: int, uncached: int,
                at: _dt.datetime | None = None) -> float | None:
    """USD for one prompt: ``cached`` tokens at the cache-read price,
    ``written`` (part of ``uncached``) at the cache-write price, the rest of
    ``uncached`` at the input price. ``None`` (unknown) without a price, or
    when tokens are read from cache and the row has no cache-read price."""
    if price is None:
        return None
    r = price.rates(prompt_tokens=cached + uncached, at=at)
    if cached and r.cache_read is None:
        return None
    write = r.cache_write if r.cache_write is not None else r.input
    rest = max(0, uncached - written)
    return (cached * (r.cache_read or 0.0) + written * write + rest * r.input) / 1_000_000


def lost_cost(price: Price | None, lost: int, *, prompt_tokens: int | None = None,
              at: _dt.datetime | None = None) -> float | None:
    """USD that ``lost`` tokens cost at the input price over reading them
    from cache: ``lost x (input - cache_read)``. ``None`` (unknown) without a
    price or a cache-read price."""
    if price is None:
        return None
    r = price.rates(prompt_tokens=prompt_tokens, at=at)
    if r.cache_read is None:
        return None if lost else 0.0
    return lost * (r.input - r.cache_read) / 1_000_000


@dataclass(frozen=True)
class PriceTable:
    """A named, dated set of prices with alias-aware lookup."""

    name: str
    as_of: str
    prices: tuple[Price, ...]

    def models(self, provider: str | None = None) -> list[str]:
        fam = _family(provider) if provider else None
        return [f"{p.provider}/{p.model}" for p in self.prices if fam is None or p.provider == fam]

    def lookup(self, provider: str | None, model: str) -> Price:
        """The price of ``model`` at ``provider`` (``None``: any provider): a
        LiteLLM entry name, else the model name exactly (the provider's own row
        first), else the longest known name it extends with a price-neutral
        tail (``-20250929``, ``-latest``); :class:`UnknownName` otherwise."""
        fam = _family(provider) if provider else None
        full = model.strip().lower()
        key = full.rsplit("/", 1)[-1]
        rows = [p for p in self.prices if fam is None or p.provider == fam]
        for p in rows:
            if p.key and p.key.lower() == full:
                return p
        wanted = (provider or "").strip().lower()
        exact = [p for p in rows if p.model.lower() == key]
        if exact:
            def rank(p: Price) -> tuple[bool, bool]:
                own_vendor = not p.vendor or p.vendor.lower() in (wanted, p.provider)
                plain_key = not p.key or p.key.lower() in (key, f"{p.vendor.lower()}/{key}")
                return (not own_vendor, not plain_key)
            return min(exact, key=rank)  # min keeps file order among equals
        best: Price | None = None
        for p in rows:
            name = p.model.lower()
            sep = key[len(name)] if key.startswith(name) and len(key) > len(name) else ""
            # "gpt-5.5" is another model than "gpt-5": after a dot, a number is a version
            if sep and sep in "-@:" or sep == "." and not key[len(name) + 1 :][:1].isdigit():
                if _NEUTRAL_TAIL.match(key[len(name) + 1 :]) and (best is None or len(name) > len(best.model)):
                    best = p
        if best is None:
            raise UnknownName(f"model (prices: {self.name})", model, self.models(provider))
        return best


#: how many of the provider's priced models a "no price" note names
_NOTE_MODELS = 6


def no_price_note(table: PriceTable, provider: str, model: str) -> str:
    """The note for a model the table has no price for (its dollars show "no
    price", never $0), naming whole models only.

    >>> no_price_note(PriceTable("t", "2026-01-01", ()), "acme", "m-1")
    'no price for acme/m-1 in t (as of 2026-01-01): the table has no acme models; pass --prices FILE (a LiteLLM price map) to price it'
    """
    known = [m.split("/", 1)[1] for m in table.models(provider)]
    if known:
        shown = ", ".join(known[:_NOTE_MODELS]) + (f" and {len(known) - _NOTE_MODELS} more"
                                                   if len(known) > _NOTE_MODELS else "")
        what = f"its {_family(provider)} models: {shown}"
    else:
        what = f"the table has no {_family(provider)} models"
    return (f"no price for {provider}/{model} in {table.name} (as of {table.as_of}): {what}; "
            "pass --prices FILE (a LiteLLM price map) to price it")


def _family(provider: str) -> str:
    """A provider's family (:func:`fidelity.providers.family`; unknown names kept)."""
    p = provider.strip().lower()
    try:
        return providers.family(p)
    except UnknownName:
        return p


def load(path: str | Path | None = None) -> PriceTable:
    """The bundled table, or the LiteLLM ``model_prices_and_context_window.json``
    at ``path``. A malformed file raises :class:`InputError` naming it."""
    if path is None:
        data = resources.files("fidelity").joinpath("data", "prices.json").read_bytes()
        return parse_bundled(jsonio.loads(data, path="fidelity/data/prices.json"), path="fidelity/data/prices.json")
    p = Path(path)
    doc = jsonio.load(p)
    try:
        as_of = _dt.date.fromtimestamp(p.stat().st_mtime).isoformat()
    except OSError:  # pragma: no cover - the file was just read
        as_of = "unknown"
    return parse_litellm(doc, path=str(p), as_of=as_of)


def _number(value: Any, *, path: str, pointer: str, optional: bool = False) -> float | None:
    if value is None and optional:
        return None
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise InputError(f"expected a number, got {type(value).__name__}", path=path, pointer=pointer)
    if value < 0:
        raise InputError(f"negative price {value}", path=path, pointer=pointer)
    return float(value)


def parse_bundled(doc: Any, *, path: str = "prices.json") -> PriceTable:
    """Parse the bundled table's format (see ``fidelity/data/prices.json``)."""
    if not isinstance(doc, dict):
        raise InputError("expected a JSON object", path=path)
    for key in ("name", "as_of", "models"):
        if key not in doc:
            raise InputError(f"missing {key!r}", path=path, pointer="")
    rows: list[Price] = []
    for i, row in enumerate(doc["models"]):
        ptr = f"/models/{i}"
        if not isinstance(row, dict):
            raise InputError("expected an object", path=path, pointer=ptr)
        missing = [k for k in ("provider", "model", "input", "output", "source", "as_of") if k not in row]
        if missing:
            raise InputError(f"missing {', '.join(missing)}", path=path, pointer=ptr)
        off_peak = None
        if "off_peak" in row:
            if not isinstance(row["off_peak"], dict):
                raise InputError("expected an object", path=path, pointer=f"{ptr}/off_peak")
            off_peak = _rates(row["off_peak"], path=path, pointer=f"{ptr}/off_peak")
        hours = _windows(row.get("peak_hours_utc", []), path=path, pointer=f"{ptr}/peak_hours_utc")
        if (off_peak is None) != (not hours):
            raise InputError("off_peak and peak_hours_utc go together", path=path, pointer=ptr)
        rates = _rates(row, path=path, pointer=ptr)
        rows.append(Price(provider=str(row["provider"]), model=str(row["model"]), **asdict(rates),
                          source=str(row["source"]), as_of=str(row["as_of"]), note=str(row.get("note", "")),
                          off_peak=off_peak, peak_hours_utc=hours))
    return PriceTable(name=str(doc["name"]), as_of=str(doc["as_of"]), prices=tuple(rows))


def _rates(obj: dict[str, Any], *, path: str, pointer: str) -> Rates:
    for k in ("input", "output"):
        if k not in obj:
            raise InputError(f"missing {k}", path=path, pointer=pointer)
    return Rates(
        input=_number(obj["input"], path=path, pointer=f"{pointer}/input") or 0.0,
        cache_read=_number(obj.get("cache_read"), path=path, pointer=f"{pointer}/cache_read", optional=True),
        cache_write=_number(obj.get("cache_write"), path=path, pointer=f"{pointer}/cache_write", optional=True),
        output=_number(obj["output"], path=path, pointer=f"{pointer}/output") or 0.0,
    )


_WINDOW = re.compile(r"^([01]\d|2[0-3]):([0-5]\d)-([01]\d|2[0-4]):([0-5]\d)$")


def _windows(value: Any, *, path: str, pointer: str) -> tuple[tuple[int, int], ...]:
    """``["01:00-04:00", ...]`` (UTC) as minutes after midnight."""
    if not isinstance(value, list):
        raise InputError("expected a list of \"HH:MM-HH:MM\" windows", path=path, pointer=pointer)
    out = []
    for i, w in enumerate(value):
        m = _WINDOW.match(w) if isinstance(w, str) else None
        if m is None or int(m[1]) * 60 + int(m[2]) >= int(m[3]) * 60 + int(m[4]):
            raise InputError(f"expected \"HH:MM-HH:MM\" (UTC, start before end), got {w!r}", path=path,
                             pointer=f"{pointer}/{i}")
        out.append((int(m[1]) * 60 + int(m[2]), int(m[3]) * 60 + int(m[4])))
    return tuple(out)


def parse_litellm(doc: Any, *, path: str = "model_prices_and_context_window.json", as_of: str = "unknown") -> PriceTable:
    """Parse LiteLLM's price map (costs per token, converted to per million);
    a ``tiered_pricing`` entry keeps its tiers and takes the first as its flat
    price; entries without input and output costs and ``sample_spec`` are skipped."""
    if not isinstance(doc, dict):
        raise InputError("expected a JSON object mapping model names to prices", path=path)
    rows: list[Price] = []
    for name, entry in doc.items():
        if name == "sample_spec":
            continue
        ptr = "/" + str(name).replace("~", "~0").replace("/", "~1")
        if not isinstance(entry, dict):
            raise InputError("expected an object", path=path, pointer=ptr)
        tiered = entry.get("tiered_pricing")
        flat = "input_cost_per_token" in entry and "output_cost_per_token" in entry
        if not flat and not (isinstance(tiered, list) and tiered):
            continue
        provider = entry.get("litellm_provider")
        if not isinstance(provider, str):
            raise InputError("missing litellm_provider", path=path, pointer=ptr)
        tiers = [_litellm_tier(t, path=path, pointer=f"{ptr}/tiered_pricing/{i}", last=i == len(tiered) - 1,
                               base=entry) for i, t in enumerate(tiered)] if isinstance(tiered, list) else []
        rates = _litellm_rates(entry, path=path, pointer=ptr) if flat else tiers[0][1]
        note = f"LiteLLM entry {name!r}" + (f", {len(tiers)} prompt-length tiers" if tiers else "")
        rows.append(Price(provider=_family(provider), model=str(name).rsplit("/", 1)[-1], **asdict(rates),
                          source=path, as_of=as_of, note=note, tiers=tuple(tiers), vendor=provider, key=str(name)))
    if not rows:
        raise InputError("no model with input_cost_per_token and output_cost_per_token", path=path)
    return PriceTable(name=f"LiteLLM prices ({Path(path).name})", as_of=as_of, prices=tuple(rows))


def _litellm_rates(obj: dict[str, Any], *, path: str, pointer: str, base: dict[str, Any] | None = None) -> Rates:
    def get(k: str, optional: bool) -> float | None:
        value = _number(obj.get(k, (base or {}).get(k) if optional else None), path=path, pointer=f"{pointer}/{k}",
                        optional=optional)
        return None if value is None else round(value * 1_000_000, 9)  # per token -> per million

    write = get("cache_creation_input_token_cost", True)
    return Rates(input=get("input_cost_per_token", False) or 0.0,
                 cache_read=get("cache_read_input_token_cost", True),
                 cache_write=None if write == 0 else write,  # 0: not given, not free
                 output=get("output_cost_per_token", False) or 0.0)


def _litellm_tier(t: Any, *, path: str, pointer: str, last: bool, base: dict[str, Any]) -> tuple[int | None, Rates]:
    if not isinstance(t, dict):
        raise InputError("expected an object", path=path, pointer=pointer)
    rng = t.get("range")
    if not (isinstance(rng, list) and len(rng) == 2 and all(isinstance(x, (int, float)) and not isinstance(x, bool)
                                                             for x in rng)):
        raise InputError("a tier needs \"range\": [from, to] in prompt tokens", path=path, pointer=f"{pointer}/range")
    return (None if last else int(rng[1])), _litellm_rates(t, path=path, pointer=pointer, base=base)
