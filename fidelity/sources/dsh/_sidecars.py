"""Sidecars: the real system prompt and tool schemas behind the placeholders (:mod:`fidelity.sources.dsh`)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ...errors import InputError
from ...jsonio import load, read_bytes
from ...model import FrozenDict, freeze
from ._values import _JS_WHITESPACE, _PROMPT_CHANGE_RE

__all__ = ["Sidecars", "read_system_sidecar", "read_tools_sidecar", "sidecars"]


@dataclass(frozen=True)
class Sidecars:
    """System prompt and tool schemas behind a session's placeholders:
    ``system(r)`` / ``tools(r)`` give header revision ``r`` (``initial`` for 0
    or an unpinned revision, else ``changes[r-1]``; ``None`` without a sidecar)."""

    system_initial: str | None = None
    system_changes: tuple[str, ...] = ()
    system_path: Path | None = None
    tools_initial: tuple[FrozenDict, ...] | None = None
    tools_changes: tuple[tuple[FrozenDict, ...], ...] = ()
    tools_path: Path | None = None

    def system(self, revision: int = 0) -> str | None:
        if 0 < revision <= len(self.system_changes):
            return self.system_changes[revision - 1]
        return self.system_initial

    def tools(self, revision: int = 0) -> tuple[FrozenDict, ...] | None:
        if 0 < revision <= len(self.tools_changes):
            return self.tools_changes[revision - 1]
        return self.tools_initial


def _js_trim_end(text: str) -> str:
    return text.rstrip(_JS_WHITESPACE)


def read_system_sidecar(path: Path) -> tuple[str, tuple[str, ...]]:
    """A ``system-prompt*.expected.md`` -> (initial, changes), each hydrated
    the way DSH replay does (``trimEnd``)."""
    raw = read_bytes(path)
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise InputError(f"not UTF-8: {exc.reason}", path=path) from None
    parts = _PROMPT_CHANGE_RE.split(text)
    return _js_trim_end(parts[0]), tuple(_js_trim_end(p) for p in parts[1:])


def read_tools_sidecar(path: Path) -> tuple[tuple[FrozenDict, ...], tuple[tuple[FrozenDict, ...], ...]]:
    """A ``tool-schemas*.expected.json`` ``{"initial": [...], "changes": [[...], ...]}``."""
    value = freeze(load(path))
    if not isinstance(value, dict):
        raise InputError("tool-schema sidecar must be an object", path=path)
    initial, changes = value.get("initial"), value.get("changes")
    if (
        not isinstance(initial, tuple)
        or not isinstance(changes, tuple)
        or not all(isinstance(c, tuple) for c in changes)
    ):
        raise InputError("tool-schema sidecar needs list-valued initial and changes (a list of lists)", path=path)
    for i, schemas in enumerate((initial,) + changes):
        for j, schema in enumerate(schemas):
            if not isinstance(schema, dict) or not isinstance(schema.get("name"), str):
                where = f"/initial/{j}" if i == 0 else f"/changes/{i - 1}/{j}"
                raise InputError("tool schema needs a string name", path=path, pointer=where)
    return initial, changes


def _load_classes(header_classes: Any) -> dict[str, FrozenDict]:
    if header_classes is None:
        return {}
    if isinstance(header_classes, (str, Path)):
        path = Path(header_classes)
        value = freeze(load(path))
    else:
        path, value = None, freeze(header_classes)
    rows = value.get("scenarios") if isinstance(value, dict) else value
    if not isinstance(rows, tuple) or not all(isinstance(r, dict) and isinstance(r.get("name"), str) for r in rows):
        raise InputError("header classes need a list of scenarios with names", path=path)
    return {r["name"]: r for r in rows}


def _file(path: Path) -> Path | None:
    return path if path.is_file() else None


def _find_classes(scenario_dir: Path) -> Path | None:
    """``examples/acp-agent/header-classes.json`` above ``tests/snapshots/<name>``."""
    for parent in list(scenario_dir.parents)[:4]:
        candidate = parent / "header-classes.json"
        if candidate.is_file():
            return candidate
    return None


def sidecars(scenario_dir: str | Path, header_classes: Any = "auto", *, child: int | None = None) -> Sidecars:
    """Resolve the system prompt and tool schemas for a scenario's session, by the
    rules of ``../shared/real/README.md`` (a child's own sidecars, else the
    ``classPin`` of ``header_classes``, else the scenario's own; docs/sources.md,
    "Request headers and sidecars"). ``header_classes``: a path, the loaded JSON,
    ``None`` (no table) or ``"auto"`` (``header-classes.json`` up to four folders above)."""
    folder = Path(scenario_dir)
    if header_classes == "auto":
        header_classes = _find_classes(folder)
    classes = _load_classes(header_classes)
    sys_path = _file(folder / f"system-prompt.{child}.expected.md") if child else None
    tools_path = _file(folder / f"tool-schemas.{child}.expected.json") if child else None
    entry = classes.get(folder.name)
    sys_dir = tools_dir = folder
    if entry is not None:
        pin_name = entry.get("classPin") or folder.name
        pin = classes.get(pin_name, entry)
        sys_dir = folder.parent / (pin.get("systemPromptSource") or pin_name)
        tools_dir = folder.parent / (pin.get("toolSchemasSource") or pin_name)
    sys_path = sys_path or _file(sys_dir / "system-prompt.expected.md")
    tools_path = tools_path or _file(tools_dir / "tool-schemas.expected.json")
    result: dict[str, Any] = {}
    if sys_path is not None:
        initial, changes = read_system_sidecar(sys_path)
        result.update(system_initial=initial, system_changes=changes, system_path=sys_path)
    if tools_path is not None:
        t_initial, t_changes = read_tools_sidecar(tools_path)
        result.update(tools_initial=t_initial, tools_changes=t_changes, tools_path=tools_path)
    return Sidecars(**result)
