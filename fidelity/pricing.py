"""List prices per model: a bundled, sourced table, or LiteLLM's price file.

Every bundled row carries the URL it comes from and the date of that price;
rows that could not be checked against the provider's own page say so in
their ``note``. Prices are USD per million tokens. ``cache_write`` is the
price of a token written to the cache (Anthropic: the 5-minute rate, 1.25x
input; providers without a write fee: equal to ``input``).

>>> from fidelity import pricing
>>> table = pricing.load()
>>> p = table.lookup("anthropic", "claude-sonnet-4-5-20250929")
>>> (p.model, p.input, p.cache_read, p.cache_write, p.output)
('claude-sonnet-4-5', 3.0, 0.3, 3.75, 15.0)
"""

from __future__ import annotations

import datetime as _dt
import re
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import Any, Iterable

from . import jsonio, providers
from .errors import InputError, UnknownName

__all__ = ["Price", "PriceTable", "load", "parse_bundled", "parse_litellm"]


# A model name's tail that does not change the price: a date, "latest",
# "preview" with a date, an "exp" tag, a version tag.
_NEUTRAL_TAIL = re.compile(r"^(?:\d[\d-]*|latest|preview(?:-[\d-]+)?|exp(?:-[\d-]+)?|v\d+(?:\.\d+)*)$")


@dataclass(frozen=True)
class Price:
    """USD per million tokens for one model. ``cache_read`` / ``cache_write``
    are ``None`` when the source gives none (cost then falls back to the
    cache model's multipliers)."""

    provider: str
    model: str
    input: float
    cache_read: float | None
    cache_write: float | None
    output: float
    source: str
    as_of: str
    note: str = ""


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
        """The price of ``model`` at ``provider`` (``None``: any provider).

        Matches exactly (case-insensitive, ignoring an ``org/`` prefix),
        then by the longest known name that the model extends with a
        price-neutral tail (a date such as ``-20250929`` or ``-2024-08-06``,
        ``-latest``, ``-preview-06-05``). ``gpt-4.1-mini`` does not fall back
        to ``gpt-4.1``. :class:`UnknownName` lists the known models.
        """
        fam = _family(provider) if provider else None
        key = model.strip().lower().rsplit("/", 1)[-1]
        rows = [p for p in self.prices if fam is None or p.provider == fam]
        for p in rows:
            if p.model.lower() == key:
                return p
        best: Price | None = None
        for p in rows:
            name = p.model.lower()
            if key.startswith(name) and len(key) > len(name) and key[len(name)] in "-@:.":
                if _NEUTRAL_TAIL.match(key[len(name) + 1 :]) and (best is None or len(name) > len(best.model)):
                    best = p
        if best is None:
            raise UnknownName(f"model (prices: {self.name})", model, self.models(provider))
        return best


def _family(provider: str) -> str:
    """The price table's provider column for a provider name (its family per
    :func:`fidelity.providers.family`; unknown names are kept as given)."""
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
        rows.append(
            Price(
                provider=str(row["provider"]),
                model=str(row["model"]),
                input=_number(row["input"], path=path, pointer=f"{ptr}/input") or 0.0,
                cache_read=_number(row.get("cache_read"), path=path, pointer=f"{ptr}/cache_read", optional=True),
                cache_write=_number(row.get("cache_write"), path=path, pointer=f"{ptr}/cache_write", optional=True),
                output=_number(row["output"], path=path, pointer=f"{ptr}/output") or 0.0,
                source=str(row["source"]),
                as_of=str(row["as_of"]),
                note=str(row.get("note", "")),
            )
        )
    return PriceTable(name=str(doc["name"]), as_of=str(doc["as_of"]), prices=tuple(rows))


def _per_million(value: float | None) -> float | None:
    return None if value is None else round(value * 1_000_000, 9)


def parse_litellm(doc: Any, *, path: str = "model_prices_and_context_window.json", as_of: str = "unknown") -> PriceTable:
    """Parse LiteLLM's price map: ``{model: {input_cost_per_token,
    output_cost_per_token, cache_read_input_token_cost,
    cache_creation_input_token_cost, litellm_provider, ...}}`` (costs per
    token; converted to per million). Entries without both input and output
    costs (image, audio, embedding-only models) and ``sample_spec`` are
    skipped."""
    if not isinstance(doc, dict):
        raise InputError("expected a JSON object mapping model names to prices", path=path)
    rows: list[Price] = []
    for name, entry in doc.items():
        if name == "sample_spec":
            continue
        ptr = "/" + str(name).replace("~", "~0").replace("/", "~1")
        if not isinstance(entry, dict):
            raise InputError("expected an object", path=path, pointer=ptr)
        if "input_cost_per_token" not in entry or "output_cost_per_token" not in entry:
            continue
        provider = entry.get("litellm_provider")
        if not isinstance(provider, str):
            raise InputError("missing litellm_provider", path=path, pointer=ptr)
        fields = {
            k: _number(entry.get(k), path=path, pointer=f"{ptr}/{k}", optional=k.startswith("cache"))
            for k in ("input_cost_per_token", "output_cost_per_token", "cache_read_input_token_cost", "cache_creation_input_token_cost")
        }
        rows.append(
            Price(
                provider=_family(provider),
                model=str(name).rsplit("/", 1)[-1],
                input=_per_million(fields["input_cost_per_token"]) or 0.0,
                cache_read=_per_million(fields["cache_read_input_token_cost"]),
                cache_write=_per_million(fields["cache_creation_input_token_cost"]),
                output=_per_million(fields["output_cost_per_token"]) or 0.0,
                source=path,
                as_of=as_of,
                note=f"LiteLLM entry {name!r}",
            )
        )
    if not rows:
        raise InputError("no model with input_cost_per_token and output_cost_per_token", path=path)
    return PriceTable(name=f"LiteLLM prices ({Path(path).name})", as_of=as_of, prices=tuple(rows))


def iter_rows(table: PriceTable) -> Iterable[Price]:
    return iter(table.prices)
