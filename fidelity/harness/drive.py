"""Drive one harness headless through ``fidelity proxy`` in front of the
scripted upstream, in a scratch workspace (own ``HOME``, a two-file project,
stdin from ``/dev/null``, a wall-clock limit) with a planted key; every file
the proxy wrote is then checked for the key (a key on disk is an error)."""

from __future__ import annotations

import os
import re
import subprocess
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import orjson

from ..errors import FidelityError
from ..proxy import _store
from ..proxy.script import Script
from ..proxy.testing import ProxyThread, UpstreamThread

__all__ = ["DUMMY_KEY", "Run", "HarnessFailed", "drive", "fill", "tool_names", "assert_no_key"]

#: a planted credential: it must reach the upstream and never the disk
DUMMY_KEY = "sk-fidelity-harness-dummy-key-5f1c2e9a7b"
_ANSI = re.compile(r"\x1b\[[0-9;]*[A-Za-z]")  # terminal colours in a harness's output


class HarnessFailed(FidelityError):
    """The harness ran but did not produce the requests a kind needs."""


@dataclass
class Run:
    returncode: int
    output: str
    received: list[Any]
    snapshots: dict[bytes, Path]  # body -> snapshot file
    lines: list[str]
    out: Path
    proxy_url: str

    def body_of(self, rule: str) -> bytes:
        """The first request body the upstream answered with ``rule``."""
        bodies: list[bytes] = [r.body for r in self.received if r.rule == rule]
        if not bodies:
            tail = " ".join(_ANSI.sub("", self.output)[-600:].split())
            raise HarnessFailed(f"the upstream never answered rule {rule!r} (exit {self.returncode}): {tail}")
        return bodies[0]

    def snapshot_of(self, body: bytes) -> Path:
        if body not in self.snapshots:
            raise HarnessFailed("the proxy's snapshot of this request is missing or not byte-identical")
        return self.snapshots[body]

    def key_forwarded(self) -> bool:
        return any(DUMMY_KEY in v for r in self.received for _, v in r.headers)


def fill(text: str, proxy: str) -> str:
    """A descriptor value with ``{proxy}`` and ``{key}`` filled in."""
    return text.replace("{proxy}", proxy).replace("{key}", DUMMY_KEY)


def assert_no_key(paths: Sequence[Path]) -> None:
    """Raise when any file under ``paths`` holds the planted key."""
    needle = DUMMY_KEY.encode()
    for root in paths:
        for path in sorted(root.rglob("*")) if root.is_dir() else [root]:
            if path.is_file() and needle in path.read_bytes():
                raise FidelityError(f"{path}: the planted key reached the disk")


def drive(argv: Sequence[str], env: Mapping[str, str], script: Script, tmp: Path, *, timeout: float = 300,
          files: Mapping[str, str] | None = None) -> Run:
    """Run ``argv`` in ``tmp/project`` with ``HOME=tmp/home`` against the
    proxy; ``env`` and ``files`` (``home/...`` or ``project/...`` -> text)
    may hold ``{proxy}`` and ``{key}``. Snapshots go to ``tmp/snaps``."""
    home, project, out = tmp / "home", tmp / "project", tmp / "snaps"
    home.mkdir(parents=True)
    project.mkdir()
    (project / "README.md").write_text("A small project for a harness test.\n")
    (project / "main.py").write_text("print('hello')\n")
    base = {"PATH": os.environ.get("PATH", ""), "HOME": str(home), "XDG_CONFIG_HOME": str(home / ".config"),
            "LANG": "C.UTF-8", "TERM": "dumb", "CI": "1", "NO_COLOR": "1"}
    with UpstreamThread(script) as up, ProxyThread(up.url, out) as px:
        for rel, text in (files or {}).items():
            where, _, sub = rel.partition("/")
            if where not in ("home", "project") or not sub:
                raise FidelityError(f"a descriptor file goes under home/ or project/, not {rel!r}")
            target = (home if where == "home" else project) / sub
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_text(fill(text, px.url))
        full_env = {**base, **{k: fill(v, px.url) for k, v in env.items()}}
        try:
            r = subprocess.run([*argv], cwd=project, env=full_env, stdin=subprocess.DEVNULL, capture_output=True,
                               text=True, timeout=timeout)
            code, output = r.returncode, r.stdout + r.stderr
        except subprocess.TimeoutExpired as exc:
            code, output = -1, f"timed out after {timeout:.0f} s: {exc.stdout!r} {exc.stderr!r}"
        received = up.received
        proxy_url = px.url
        redactor = px.proxy.redactor
    # the proxy is closed: every snapshot is written, and none holds the key
    if out.is_dir():
        assert_no_key([out])
    written = {_store.snapshot.read(p).body: p for p in sorted(out.glob("*.snapshot"))} if out.is_dir() else {}
    # a body as the upstream received it -> its snapshot; the proxy scrubs values it learned
    # from credential headers out of the body too (Codex's session id is also its
    # prompt_cache_key), so a snapshot holds the scrubbed bytes
    snaps = {r.body: written[redactor.scrub_bytes(r.body)] for r in received
             if redactor.scrub_bytes(r.body) in written}
    return Run(code, output, received, snaps, list(px.lines), out, proxy_url)


def tool_names(body: bytes) -> list[str]:
    """The tools a request declares, in order (Chat, Anthropic, Responses, Gemini)."""
    obj = orjson.loads(body)
    names: list[str] = []
    for t in obj.get("tools") or ():
        if "function" in t:
            names.append(t["function"]["name"])
        elif "name" in t:
            names.append(t["name"])
        for decl in t.get("functionDeclarations") or ():
            names.append(decl["name"])
    return names
