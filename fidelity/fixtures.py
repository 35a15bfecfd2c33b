"""The bundled fixtures: parent sessions and the provider table, shipped as
package data (``fidelity/data/fixtures``). A fixtures directory given on the
command line has the same layout (``sessions.toml``, optional
``providers.toml`` and ``compositions.toml``); what it lacks comes from the
bundled set."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import Any

from . import providers as provider_table
from .canonical import request_from_json
from .errors import InputError
from .jsonio import toml_loads
from .model import Request

__all__ = ["Session", "ProviderSetup", "FixtureSet", "load", "bundled_dir"]


@dataclass(frozen=True)
class Session:
    """A parent's history (a trailing assistant message is its last
    response) and the child directives to fork it with."""

    name: str
    title: str
    description: str
    file: str
    history: Request
    directive: str
    siblings: tuple[str, ...]


@dataclass(frozen=True)
class ProviderSetup:
    """One scored provider: the wire dialect, its model and the
    route-change target."""

    dialect: str
    model: str
    alt_model: str


@dataclass(frozen=True)
class FixtureSet:
    """Sessions and providers to score, and where the definitions came from
    (``source``: ``bundled`` or the directory name as given)."""

    source: str
    sessions: tuple[Session, ...]
    providers: tuple[ProviderSetup, ...]
    compositions: bytes


def bundled_dir() -> Any:
    """The bundled fixtures folder (an importlib Traversable)."""
    return resources.files("fidelity").joinpath("data", "fixtures")


def _read(base: Any, name: str, fallback: Any | None) -> tuple[bytes, str]:
    item = base.joinpath(name)
    if item.is_file():
        return item.read_bytes(), str(item)
    if fallback is not None:
        return fallback.joinpath(name).read_bytes(), f"bundled {name}"
    raise InputError(f"missing {name}", path=str(base))


def _session(base: Any, obj: Mapping[str, Any], where: str) -> Session:
    for key in ("name", "file", "directive"):
        if not isinstance(obj.get(key), str):
            raise InputError(f"session needs a string {key!r}", path=where)
    item = base.joinpath(obj["file"])
    if not item.is_file():
        raise InputError(f"session {obj['name']!r}: no such file {obj['file']!r}", path=where)
    history = request_from_json(item.read_bytes(), path=str(item))
    siblings = tuple(obj.get("siblings", ()))
    return Session(obj["name"], obj.get("title", obj["name"]), str(obj.get("description", "")).strip(),
                   obj["file"], history, obj["directive"], (obj["directive"],) + siblings)


def _providers(base: Any) -> tuple[ProviderSetup, ...]:
    """The directory's ``providers.toml``, else the report setups of the
    provider descriptors (:func:`fidelity.providers.report_setups`)."""
    item = base.joinpath("providers.toml")
    if not item.is_file():
        return tuple(ProviderSetup(s.dialect, s.model, s.alt_model) for s in provider_table.report_setups())
    rows = toml_loads(item.read_bytes(), path=str(item)).get("provider", ())
    out = []
    for p in rows:
        if not isinstance(p, dict) or not isinstance(p.get("dialect"), str) or not isinstance(p.get("model"), str):
            raise InputError("each [[provider]] needs a string dialect and model", path=str(item))
        out.append(ProviderSetup(p["dialect"], p["model"], str(p.get("alt_model", p["model"]))))
    return tuple(out)


def load(directory: str | Path | None = None) -> FixtureSet:
    """Load a fixture set: the bundled one, or ``directory``."""
    bundled = bundled_dir()
    if directory is None:
        base, fallback, source = bundled, None, "bundled"
    else:
        path = Path(directory)
        if not path.is_dir():
            raise InputError("no such fixtures directory", path=path)
        base, fallback, source = path, bundled, path.name or str(directory)
    data, where = _read(base, "sessions.toml", None)
    doc = toml_loads(data, path=where)
    sessions = tuple(_session(base, s, where) for s in doc.get("session", ()))
    if not sessions:
        raise InputError("no [[session]] entries", path=where)
    providers = _providers(base)
    compositions, _ = _read(base, "compositions.toml", fallback)
    return FixtureSet(source, sessions, providers, compositions)
