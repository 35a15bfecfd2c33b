"""With ``FIDELITY_HARNESS_RECORD=1``: keep a pinned test's pair as the
report's fixture, ``fixtures/harness/<harness>-<version>/`` (the layout
:mod:`fidelity.proxy.harness_rows` reads), through the library's writer."""

from __future__ import annotations

import os
import shutil
from pathlib import Path
from typing import Any

import orjson

from fidelity.harness.capture import write_pair
from fidelity.harness.drive import Run

FIXTURES = Path(__file__).resolve().parents[2] / "fixtures" / "harness"


def record(run: Run, harness: str, version: str, parent: bytes, child: bytes, extra: dict[str, Any]) -> None:
    if os.environ.get("FIDELITY_HARNESS_RECORD") != "1":
        return
    folder = FIXTURES / f"{harness}-{version}"
    if folder.exists():
        shutil.rmtree(folder)
    folder.mkdir(parents=True)
    write_pair(folder, run, parent, child)
    meta = {"harness": harness, "version": version, **extra}
    lines = [f"{k} = {orjson.dumps(v).decode()}" for k, v in meta.items() if not isinstance(v, dict)]
    for k, v in meta.items():
        if isinstance(v, dict):
            lines += ["", f"[{k}]", *(f"{kk} = {orjson.dumps(vv).decode()}" for kk, vv in v.items())]
    # TOML, not JSON: `fidelity diff FOLDER` reads every *.json there as a request body
    (folder / "harness.toml").write_text("\n".join(lines) + "\n")
