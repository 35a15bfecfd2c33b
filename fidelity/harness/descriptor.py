"""Harness descriptors: one TOML file per harness under
``fidelity/data/harnesses/`` (where it comes from, how to run it headless
against the proxy, one ``[[kind]]`` per subagent mechanism), so adding a
harness is adding data. The fields: docs/harness.md."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..errors import InputError, UnknownName
from ..jsonio import load_toml

__all__ = ["Descriptor", "Kind", "FOLDER", "load", "load_all", "names"]

#: the bundled descriptors
FOLDER = Path(__file__).resolve().parents[1] / "data" / "harnesses"
_TOP = {"title", "package", "registry", "binary", "family", "argv", "env", "files", "kind", "unsupported",
        "ci_pinned", "also", "prereleases", "npm_args", "post_install"}
_FAMILIES = ("openai", "openai-responses", "anthropic", "gemini")


@dataclass(frozen=True)
class Kind:
    """One subagent mechanism: its prompt, its upstream script, extra env."""

    name: str
    prompt: str
    script: dict[str, Any]
    env: tuple[tuple[str, str], ...] = ()


@dataclass(frozen=True)
class Descriptor:
    name: str
    title: str
    package: str
    registry: str
    binary: str
    family: str
    argv: tuple[str, ...]
    env: tuple[tuple[str, str], ...]
    files: tuple[tuple[str, str], ...]
    kinds: tuple[Kind, ...]
    unsupported: str | None = None
    #: releases the CI tests pin; releases every matrix includes besides the newest
    ci_pinned: tuple[str, ...] = ()
    also: tuple[str, ...] = ()
    #: the registry's pre-releases count as releases (a harness that publishes only those)
    prereleases: bool = False
    #: extra ``npm install`` arguments and packages (``--legacy-peer-deps``; ``{version}``: the release)
    npm_args: tuple[str, ...] = ()
    #: a command run in the install folder after the registry install (a part built from
    #: the harness's source); ``{prefix}`` (the folder), ``{bindir}``, ``{data}``, ``{version}``
    post_install: tuple[str, ...] = ()

    def argv_for(self, exe: str | Path, kind: Kind) -> list[str]:
        """The headless command line: ``{bin}``, ``{bindir}`` (its folder: a runtime
        installed beside the harness, such as a newer node), ``{data}`` (the descriptors'
        folder, for a driver app shipped beside them) and ``{prompt}`` filled in."""
        return [a.replace("{bindir}", str(Path(exe).parent)).replace("{bin}", str(exe))
                .replace("{data}", str(FOLDER)).replace("{prompt}", kind.prompt) for a in self.argv]

    def env_for(self, kind: Kind) -> dict[str, str]:
        """The harness's environment and the kind's own (``{proxy}``, ``{key}`` unfilled)."""
        return {**dict(self.env), **dict(kind.env)}

    def kind(self, name: str) -> Kind:
        for k in self.kinds:
            if k.name == name:
                return k
        raise UnknownName(f"subagent kind of {self.name}", name, [k.name for k in self.kinds])


def names(folder: Path = FOLDER) -> list[str]:
    """Every descriptor's name, sorted."""
    return sorted(p.stem for p in folder.glob("*.toml"))


def load(name: str, folder: Path = FOLDER) -> Descriptor:
    path = folder / f"{name}.toml"
    if not path.is_file():
        raise UnknownName("harness", name, names(folder))
    return parse(name, load_toml(path), path=str(path))


def load_all(folder: Path = FOLDER) -> list[Descriptor]:
    return [load(n, folder) for n in names(folder)]


def _strs(value: Any, what: str, path: str) -> tuple[str, ...]:
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise InputError(f"{what} must be a list of strings", path=path, pointer=f"/{what}")
    return tuple(value)


def _table(value: Any, what: str, path: str) -> tuple[tuple[str, str], ...]:
    if not isinstance(value, dict) or not all(isinstance(v, str) for v in value.values()):
        raise InputError(f"{what} must be a table of strings", path=path, pointer=f"/{what}")
    return tuple(value.items())


def parse(name: str, doc: dict[str, Any], *, path: str = "<descriptor>") -> Descriptor:
    """A :class:`Descriptor` from parsed TOML; bad input names the key."""
    unknown = set(doc) - _TOP
    if unknown:
        raise InputError(f"unknown key {sorted(unknown)[0]!r}", path=path)
    for key in ("title", "package", "registry", "binary", "family"):
        if not isinstance(doc.get(key), str):
            raise InputError(f"{key} must be a string", path=path, pointer=f"/{key}")
    if doc["registry"] not in ("npm", "pypi"):
        raise InputError("registry must be npm or pypi", path=path, pointer="/registry")
    if doc["family"] not in _FAMILIES:
        raise InputError(f"family must be one of {', '.join(_FAMILIES)}", path=path, pointer="/family")
    argv = _strs(doc.get("argv"), "argv", path)
    if "{prompt}" not in argv:
        raise InputError("argv must hold {prompt}", path=path, pointer="/argv")
    kinds = []
    for i, k in enumerate(doc.get("kind") or ()):
        where = f"/kind/{i}"
        if not isinstance(k, dict) or not isinstance(k.get("name"), str) or not isinstance(k.get("prompt"), str):
            raise InputError("a kind needs a name and a prompt", path=path, pointer=where)
        rules = k.get("rule") or []
        rule_names = {r.get("name") for r in rules if isinstance(r, dict)}
        if not {"parent", "child"} <= rule_names:
            raise InputError("a kind needs rules named parent and child", path=path, pointer=where)
        kinds.append(Kind(k["name"], k["prompt"], {"defaults": {"text": "Done."}, "rule": rules},
                          _table(k.get("env", {}), f"kind/{i}/env", path)))
    if not isinstance(doc.get("prereleases", False), bool):
        raise InputError("prereleases must be true or false", path=path, pointer="/prereleases")
    unsupported = doc.get("unsupported")
    if not kinds and unsupported is None:
        raise InputError("a runnable harness needs at least one [[kind]]", path=path)
    return Descriptor(name, doc["title"], doc["package"], doc["registry"], doc["binary"], doc["family"], argv,
                      _table(doc.get("env", {}), "env", path), _table(doc.get("files", {}), "files", path),
                      tuple(kinds), unsupported if isinstance(unsupported, str) else None,
                      _strs(doc.get("ci_pinned", []), "ci_pinned", path), _strs(doc.get("also", []), "also", path),
                      doc.get("prereleases", False), _strs(doc.get("npm_args", []), "npm_args", path),
                      _strs(doc.get("post_install", []), "post_install", path))
