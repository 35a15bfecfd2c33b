"""Run one harness release, every subagent kind, and keep each pair's bytes.

One folder per (release, kind), ``ROOT/NAME-VERSION/KIND/``: ``parent.snapshot``
and ``child.snapshot`` (the proxy's redacted snapshots, renumbered as a pair)
and ``capture.toml`` (what was run, whether it produced the pair, why not).
The matrix reads these folders and nothing else."""

from __future__ import annotations

import shutil
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import orjson

from ..errors import FidelityError, InputError
from ..jsonio import atomic_write, load_toml
from ..proxy import _store
from ..proxy.script import parse_script
from . import install
from .descriptor import Descriptor, Kind
from .drive import HarnessFailed, Run, assert_no_key, drive

__all__ = ["Capture", "capture_release", "capture_kind", "read_captures", "read_pair", "write_pair", "toml_text", "prune"]


@dataclass(frozen=True)
class Capture:
    """One capture folder: its metadata and, when captured, the pair's files."""

    folder: Path
    harness: str
    version: str
    kind: str
    family: str
    status: str  # "captured" or "failed"
    reason: str | None

    @property
    def parent(self) -> Path:
        return self.folder / "parent.snapshot"

    @property
    def child(self) -> Path:
        return self.folder / "child.snapshot"


def toml_text(meta: dict[str, object]) -> str:
    """Flat TOML (strings, numbers, lists): JSON scalars are TOML scalars."""
    return "".join(f"{k} = {orjson.dumps(v).decode()}\n" for k, v in meta.items() if v is not None)


def write_pair(folder: Path, run: Run, parent: bytes, child: bytes) -> None:
    """The pair's snapshots, header renumbered (seq 1 and 2, the child's parent named)."""
    for name, body, seq, parent_name in (("parent", parent, 1, None), ("child", child, 2, "parent.snapshot")):
        head, _, rest = run.snapshot_of(body).read_bytes().partition(b"\n")
        meta = orjson.loads(head)
        meta["seq"], meta["parent"] = seq, parent_name
        atomic_write(folder / f"{name}.snapshot", orjson.dumps(meta) + b"\n" + rest)


def capture_kind(d: Descriptor, version: str, kind: Kind, exe: Path, root: Path, *,
                 timeout: float = 300) -> Capture:
    """Drive ``kind`` once and write its capture folder (replacing an old one)."""
    folder, meta = _fresh(d, version, kind, root)
    argv = d.argv_for(exe, kind)
    meta.update(command=" ".join(a.replace("{bin}", d.binary).replace("{prompt}", "PROMPT") for a in d.argv),
                prompt=kind.prompt, env=[f"{k}={v}" for k, v in kind.env])
    with tempfile.TemporaryDirectory(prefix="fidelity-harness-") as tmp:
        try:
            run = drive(argv, d.env_for(kind), parse_script(kind.script), Path(tmp),
                        timeout=timeout, files=dict(d.files))
            parent, child = run.body_of("parent"), run.body_of("child")
            if not run.key_forwarded():
                raise HarnessFailed("the harness did not send the planted key: it is not talking to the proxy")
            write_pair(folder, run, parent, child)
            meta.update(status="captured")
        except HarnessFailed as exc:
            meta.update(status="failed", reason=str(exc)[:400])
    atomic_write(folder / "capture.toml", toml_text(meta).encode())
    assert_no_key([folder])
    return _read(folder)


def capture_release(d: Descriptor, version: str, root: Path, *, kinds: list[str] | None = None,
                    timeout: float = 300) -> list[Capture]:
    """Install ``d`` at ``version`` and capture each kind (``kinds``: a subset)."""
    if d.unsupported:
        raise FidelityError(f"{d.name} cannot be run here: {d.unsupported}")
    chosen = [d.kind(k) for k in kinds] if kinds else list(d.kinds)
    try:
        exe = install.install(d, version)
    except FidelityError as exc:  # a release that does not install is a finding too
        return [_failed(d, version, k, root, str(exc)) for k in chosen]
    return [capture_kind(d, version, k, exe, root, timeout=timeout) for k in chosen]


def _fresh(d: Descriptor, version: str, kind: Kind, root: Path) -> tuple[Path, dict[str, object]]:
    """An empty capture folder for ``kind`` (an old one removed) and its metadata's first members."""
    folder = root / f"{d.name}-{version}" / kind.name
    if folder.exists():
        shutil.rmtree(folder)
    folder.mkdir(parents=True)
    return folder, {"harness": d.name, "version": version, "kind": kind.name, "package": d.package,
                    "family": d.family}


def _failed(d: Descriptor, version: str, kind: Kind, root: Path, reason: str) -> Capture:
    folder, meta = _fresh(d, version, kind, root)
    meta.update(status="failed", reason=reason[:400])
    atomic_write(folder / "capture.toml", toml_text(meta).encode())
    return _read(folder)


def prune(d: Descriptor, keep: list[str], root: Path) -> None:
    """Remove ``d``'s capture folders of releases not in ``keep``."""
    if not root.is_dir():
        return
    for release in root.iterdir():  # NAME-VERSION; a version may hold "-" itself (0.1.0-rc.8)
        version = release.name.removeprefix(f"{d.name}-")
        if release.is_dir() and version != release.name and version[:1].isdigit() and version not in keep:
            shutil.rmtree(release)


def _read(folder: Path) -> Capture:
    path = folder / "capture.toml"
    meta = load_toml(path)
    try:
        cap = Capture(folder, str(meta["harness"]), str(meta["version"]), str(meta["kind"]), str(meta["family"]),
                      str(meta["status"]), meta.get("reason"))
    except KeyError as exc:
        raise InputError(f"missing key {exc.args[0]!r}", path=path) from None
    if cap.status == "captured" and not (cap.parent.is_file() and cap.child.is_file()):
        raise InputError("status is captured but parent.snapshot or child.snapshot is missing", path=path)
    return cap


def read_captures(root: Path) -> Iterator[Capture]:
    """Every capture folder under ``root`` (``NAME-VERSION/KIND/``), in name order."""
    if not root.is_dir():
        return
    for release in sorted(p for p in root.iterdir() if p.is_dir()):
        for kind in sorted(p for p in release.iterdir() if p.is_dir()):
            yield _read(kind)


def read_pair(cap: Capture) -> tuple[bytes, bytes]:
    return _store.snapshot.read(cap.parent).body, _store.snapshot.read(cap.child).body
