"""Two more real harnesses in CI, beside Qwen Code and Claude Code: Gemini CLI
and opencode at their pinned releases (``ci_pinned`` in their descriptors),
captured live through the proxy against the scripted upstream, must give the
verdicts the committed matrix (``reports/harness-matrix.json``) shows for
that release: the same verdict, segment, pointer and cause per subagent kind
and provider. Token counts are not compared: the harness's system prompt
carries its scratch folder's path, which differs from run to run."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from fidelity.harness import load
from fidelity.harness.capture import capture_release
from fidelity.harness.matrix import build_from
from harness.conftest import unavailable

REPO = Path(__file__).resolve().parents[2]
KEYS = ("verdict", "segment", "pointer", "cause")


@pytest.mark.harness
@pytest.mark.parametrize("name", ["gemini-cli", "opencode"])
def test_pinned_release_gives_the_committed_matrix_verdicts(name: str, tmp_path: Path) -> None:
    if not shutil.which("node") or not shutil.which("npm"):
        unavailable("node and npm are not on PATH")
    d = load(name)
    version = d.ci_pinned[0]
    caps = capture_release(d, version, tmp_path)
    failed = [c.reason for c in caps if c.status != "captured"]
    if failed and any("install" in (r or "").lower() for r in failed):
        unavailable(f"{name}@{version} did not install: {failed[0]}")
    assert not failed, failed
    live = build_from(caps)["rows"]
    committed = [r for r in json.loads((REPO / "reports" / "harness-matrix.json").read_text())["rows"]
                 if r["harness"] == name and r["release"] == version]
    assert committed, f"the committed matrix has no row for {name}@{version}"

    def keyed(rows: list[dict[str, object]]) -> dict[tuple[object, object], tuple[object, ...]]:
        return {(r["kind"], r["provider_id"]): tuple(r.get(k) for k in KEYS) for r in rows}

    assert keyed(live) == keyed(committed)
