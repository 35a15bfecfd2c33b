"""Small contracts from the review of the first build (issue 15): no dead
code, one predict, no catch-all around a price lookup, no private reads or
asserts for control flow in calibration, and the diff's parent excerpt at the
cache-view position when the child appends."""

from __future__ import annotations

import ast
import json
from pathlib import Path

import pytest

import fidelity
from fidelity import cache, pricing, pytest_plugin
from fidelity.diff import compare, locate
from fidelity.tokens import _bpe
from fidelity.wire import _openai_common

PKG = Path(fidelity.__file__).parent


def test_unused_code_is_gone() -> None:
    assert not hasattr(pricing, "iter_rows")
    assert not hasattr(locate, "member_at")
    assert not hasattr(_openai_common, "require_str")
    assert not any(hasattr(cls, "token_bytes") for cls in vars(_bpe).values() if isinstance(cls, type))
    assert not hasattr(pytest_plugin, "prefix_preserved")


def test_one_cache_computation_and_a_later_request_is_refused() -> None:
    """Cache models keep only their rules: cached tokens come from the
    simulator alone (issue 29), which takes requests in time order."""
    from fidelity.cache.simulator import SimRequest, Simulator
    from fidelity.errors import InputError

    assert not hasattr(cache, "CacheOutcome")
    assert not [name for name in cache.names() if hasattr(cache.get(name), "predict")]
    for name in ("deepseek", "openai"):
        sim = Simulator(name)
        sim.feed(SimRequest(tuple(range(3000)), time=10.0))
        with pytest.raises(InputError, match="time order"):
            sim.feed(SimRequest(tuple(range(3000)), time=5.0))  # sent before: it cannot read what came later


def test_a_broken_price_table_is_not_reported_as_no_price() -> None:
    class Broken(pricing.PriceTable):
        def lookup(self, provider: str | None, model: str) -> pricing.Price:
            raise RuntimeError("a bug, not a missing price")

    body = json.dumps({"model": "gpt-4o", "messages": [{"role": "user", "content": "hi"}]}).encode()
    with pytest.raises(RuntimeError, match="a bug"):
        compare(body, body, prices=Broken("t", "2026-01-01", ()))
    unknown = compare(body, body, prices=pricing.PriceTable("t", "2026-01-01", ()))
    assert unknown.cost is None and "no price" in (unknown.cost_note or "")


def test_calibration_reads_no_private_attribute_and_asserts_nothing() -> None:
    tree = ast.parse((PKG / "calibrate.py").read_text())
    assert not [n for n in ast.walk(tree) if isinstance(n, ast.Assert)]
    private = [n.attr for n in ast.walk(tree) if isinstance(n, ast.Attribute) and n.attr.startswith("_")
               and not n.attr.startswith("__") and not (isinstance(n.value, ast.Name) and n.value.id == "self")]
    assert private == []


def test_parent_excerpt_is_at_the_cache_view_position_when_the_child_appends() -> None:
    parent = {"model": "gpt-4o", "messages": [{"role": "system", "content": "s " * 50},
                                              {"role": "user", "content": "last"}],
              "tools": [{"type": "function", "function": {"name": "ls", "parameters": {}}}]}
    child = {**parent, "messages": parent["messages"] + [{"role": "assistant", "content": "new"}]}
    r = compare(json.dumps(parent).encode(), json.dumps(child).encode())
    assert r.cause.kind == "appended_only"
    before, after = r.view.parent_excerpt.split("⟨here⟩")
    assert before.endswith('"content": "last"}') and after.startswith("]")  # not the end of the raw body
    assert r.view.child_excerpt.split("⟨here⟩")[1].startswith('{"role": "assistant"')
