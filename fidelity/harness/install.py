"""Install a harness release into a cache folder and list its releases.

A release goes into ``$FIDELITY_HARNESS_CACHE/NAME@VERSION`` (default
``~/.cache/fidelity/harness``) with ``npm install --prefix`` or
``pip install --target`` and is reused; release lists come from ``npm view
PKG versions --json`` / ``pip index versions PKG``, oldest first."""

from __future__ import annotations

import fcntl
import json
import os
import re
import shutil
import subprocess
from pathlib import Path

from ..errors import FidelityError
from .descriptor import FOLDER, Descriptor

__all__ = ["cache_root", "install", "installed", "binary", "releases", "version_key", "stable", "with_prereleases"]

_STABLE = re.compile(r"^\d+(\.\d+)*$")
_PRE = re.compile(r"^\d+(\.\d+)*-(alpha|beta|rc)\.\d+$")
_PRE_RANK = {"alpha": 0, "beta": 1, "rc": 2}


def cache_root() -> Path:
    env = os.environ.get("FIDELITY_HARNESS_CACHE")
    return Path(env) if env else Path.home() / ".cache" / "fidelity" / "harness"


def version_key(version: str) -> tuple[int, ...]:
    """``"0.24.10"`` -> ``(0, 24, 10, 1)``: release order, not string order; a
    pre-release (``-alpha.N``, ``-beta.N``, ``-rc.N``) sorts before its release."""
    main, _, pre = version.partition("-")
    numbers = tuple(int(p) for p in re.findall(r"\d+", main))
    m = re.match(r"(alpha|beta|rc)\.(\d+)$", pre)
    if m:  # (0, 1, 0, 0, 2, 8) < (0, 1, 0, 1): a pre-release before the release
        return (*numbers, 0, _PRE_RANK[m.group(1)], int(m.group(2)))
    return (*numbers, 1)


def stable(versions: list[str]) -> list[str]:
    """The releases without pre-releases or platform builds, oldest first."""
    return sorted({v for v in versions if _STABLE.match(v)}, key=version_key)


def with_prereleases(versions: list[str]) -> list[str]:
    """The releases and ``-alpha.N``/``-beta.N``/``-rc.N`` pre-releases (for a
    harness that publishes nothing else), platform builds left out, oldest first."""
    return sorted({v for v in versions if _STABLE.match(v) or _PRE.match(v)}, key=version_key)


def folder(d: Descriptor, version: str) -> Path:
    return cache_root() / f"{d.name}@{version}"


def installed(d: Descriptor, version: str) -> bool:
    base = folder(d, version)
    if d.post_install and not (base / ".post_install_done").is_file():
        return False
    if d.registry == "npm":
        meta = base / "node_modules" / d.package / "package.json"
        try:
            return bool(json.loads(meta.read_text())["version"] == version)
        except (OSError, ValueError, KeyError):
            return False
    return (base / ".installed").is_file()


def binary(d: Descriptor, version: str) -> Path:
    base = folder(d, version)
    return base / "node_modules" / ".bin" / d.binary if d.registry == "npm" else base / "bin" / d.binary


def _run(argv: list[str], timeout: float) -> subprocess.CompletedProcess[str]:
    if not shutil.which(argv[0]):
        raise FidelityError(f"{argv[0]} is not on PATH: it is needed to install harnesses")
    try:
        return subprocess.run(argv, capture_output=True, text=True, timeout=timeout, stdin=subprocess.DEVNULL)
    except subprocess.TimeoutExpired:
        raise FidelityError(f"{' '.join(argv[:3])} ... did not finish in {timeout:.0f} s") from None


def _why(output: str) -> str:
    """The telling lines of a failed install (not npm's "a complete log" footer)."""
    lines = [ln.strip() for ln in output.splitlines()
             if ln.strip() and "complete log of this run" not in ln and not ln.startswith("npm error path")]
    return "; ".join(lines[:3])[:300] or "no output"


def _fill(arg: str, d: Descriptor, version: str) -> str:
    """A ``post_install`` argument with its placeholders filled in."""
    return (arg.replace("{prefix}", str(folder(d, version))).replace("{bindir}", str(binary(d, version).parent))
            .replace("{data}", str(FOLDER)).replace("{version}", version))


def install(d: Descriptor, version: str, *, timeout: float = 900) -> Path:
    """Install ``d`` at ``version`` (once) and return its executable."""
    base = folder(d, version)
    base.parent.mkdir(parents=True, exist_ok=True)
    with open(base.parent / f".{d.name}@{version}.lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # two runs install a release once
        if not installed(d, version):
            if d.registry == "npm":
                r = _run(["npm", "install", "--prefix", str(base), "--no-audit", "--no-fund", "--no-save",
                          "--loglevel=error", *(a.replace("{version}", version) for a in d.npm_args),
                          f"{d.package}@{version}"], timeout)
            else:
                r = _run(["python3", "-m", "venv", str(base)], timeout)
                if r.returncode == 0:
                    r = _run([str(base / "bin" / "pip"), "install", "--quiet", f"{d.package}=={version}"], timeout)
                if r.returncode == 0:
                    (base / ".installed").write_text(version + "\n")
            if r.returncode == 0 and d.post_install:
                r = _run([_fill(a, d, version) for a in d.post_install], timeout)
                if r.returncode == 0:
                    (base / ".post_install_done").write_text(version + "\n")
            if r.returncode != 0:
                why = _why(r.stderr or r.stdout).replace(str(base), f"{d.name}@{version}")  # no local paths
                raise FidelityError(f"installing {d.package}@{version} failed: {why}")
    exe = binary(d, version)
    if not exe.exists():
        raise FidelityError(f"{d.package}@{version} installed but has no {d.binary} executable")
    return exe


def releases(d: Descriptor, *, timeout: float = 120) -> list[str]:
    """The registry's stable releases of ``d``, oldest first."""
    if d.registry == "npm":
        r = _run(["npm", "view", d.package, "versions", "--json"], timeout)
        if r.returncode != 0:
            raise FidelityError(f"npm view {d.package} failed: {r.stderr.strip()[-300:]}")
        try:
            found = json.loads(r.stdout)
        except ValueError:
            raise FidelityError(f"npm view {d.package}: not JSON") from None
        found = found if isinstance(found, list) else [found]
        return with_prereleases(found) if d.prereleases else stable(found)
    r = _run(["python3", "-m", "pip", "index", "versions", d.package], timeout)
    m = re.search(r"Available versions: (.*)", r.stdout)
    if r.returncode != 0 or not m:
        raise FidelityError(f"pip index versions {d.package} failed: {(r.stderr or r.stdout).strip()[-300:]}")
    return stable([v.strip() for v in m.group(1).split(",")])
