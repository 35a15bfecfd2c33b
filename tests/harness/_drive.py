"""Drive one harness headless through the proxy against the scripted upstream."""

from __future__ import annotations

import os
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import orjson

from fidelity.proxy import _store
from fidelity.proxy.script import Script
from fidelity.proxy.testing import ProxyThread, UpstreamThread

#: a planted credential: it must reach the upstream and never the disk
DUMMY_KEY = "sk-fidelity-harness-dummy-key-5f1c2e9a7b"
#: Qwen Code headless against the proxy (``{proxy}`` is filled in by :func:`drive`)
QWEN_ENV = {"OPENAI_BASE_URL": "{proxy}/v1", "OPENAI_API_KEY": DUMMY_KEY, "OPENAI_MODEL": "qwen3-coder-plus",
            "QWEN_CODE_SUPPRESS_YOLO_WARNING": "1"}
#: Claude Code headless against the proxy (forks also need ``CLAUDE_CODE_FORK_SUBAGENT=1``)
CLAUDE_ENV = {"ANTHROPIC_BASE_URL": "{proxy}", "ANTHROPIC_API_KEY": DUMMY_KEY,
              "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1"}
REPO = Path(__file__).resolve().parents[2]
FIXTURES = REPO / "fixtures" / "harness"


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
        bodies = [r.body for r in self.received if r.rule == rule]
        assert bodies, f"the upstream never answered rule {rule!r}; harness output:\n{self.output[-2000:]}"
        return bodies[0]

    def snapshot_of(self, body: bytes) -> Path:
        assert body in self.snapshots, "the proxy's snapshot of this request is missing or not byte-identical"
        return self.snapshots[body]


def drive(argv: list[str], env: dict[str, str], script: Script, tmp: Path, *, timeout: float = 300) -> Run:
    home, project, out = tmp / "home", tmp / "project", tmp / "snaps"
    home.mkdir()
    project.mkdir()
    (project / "README.md").write_text("A small project for a harness test.\n")
    (project / "main.py").write_text("print('hello')\n")
    base = {"PATH": os.environ.get("PATH", ""), "HOME": str(home), "XDG_CONFIG_HOME": str(home / ".config"),
            "LANG": "C.UTF-8", "TERM": "dumb", "CI": "1", "NO_COLOR": "1"}
    with UpstreamThread(script) as up, ProxyThread(up.url, out) as px:
        full_env = {**base, **{k: v.replace("{proxy}", px.url) for k, v in env.items()}}
        try:
            r = subprocess.run([*argv], cwd=project, env=full_env, stdin=subprocess.DEVNULL, capture_output=True,
                               text=True, timeout=timeout)
            code, output = r.returncode, r.stdout + r.stderr
        except subprocess.TimeoutExpired as exc:
            code, output = -1, f"timed out after {timeout}s: {exc.stdout!r} {exc.stderr!r}"
        received = up.received
        proxy_url = px.url
    # the proxy is closed: every snapshot is written, and none holds the key
    for path in out.iterdir():
        assert DUMMY_KEY.encode() not in path.read_bytes(), path
    snaps = {_store.snapshot.read(p).body: p for p in sorted(out.glob("*.snapshot"))}
    return Run(code, output, received, snaps, list(px.lines), out, proxy_url)


def tool_names(body: bytes) -> list[str]:
    obj = orjson.loads(body)
    names = []
    for t in obj.get("tools") or ():
        names.append(t["function"]["name"] if "function" in t else t["name"])
    return names


def record(run: Run, harness: str, version: str, parent: bytes, child: bytes, extra: dict[str, Any]) -> None:
    """With ``FIDELITY_HARNESS_RECORD=1``: copy the pair's snapshots into
    ``fixtures/harness/<harness>-<version>/`` (already redacted)."""
    if os.environ.get("FIDELITY_HARNESS_RECORD") != "1":
        return
    folder = FIXTURES / f"{harness}-{version}"
    if folder.exists():
        shutil.rmtree(folder)
    folder.mkdir(parents=True)
    for name, body, seq, parent_name in (("parent", parent, 1, None), ("child", child, 2, "parent.snapshot")):
        head, _, rest = run.snapshot_of(body).read_bytes().partition(b"\n")
        meta = orjson.loads(head)
        meta["seq"], meta["parent"] = seq, parent_name  # the pair, on its own in the folder
        (folder / f"{name}.snapshot").write_bytes(orjson.dumps(meta) + b"\n" + rest)
    meta = {"harness": harness, "version": version, **extra}
    lines = [f"{k} = {orjson.dumps(v).decode()}" for k, v in meta.items() if not isinstance(v, dict)]
    for k, v in meta.items():
        if isinstance(v, dict):
            lines += ["", f"[{k}]", *(f"{kk} = {orjson.dumps(vv).decode()}" for kk, vv in v.items())]
    # TOML, not JSON: `fidelity diff FOLDER` reads every *.json there as a request body
    (folder / "harness.toml").write_text("\n".join(lines) + "\n")
