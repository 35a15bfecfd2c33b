"""``fidelity fork``: the reference child body of a variant, byte-exact."""

from __future__ import annotations

from dataclasses import replace

import pytest

from fidelity import cli, compose, diff, fixtures, wire
from fidelity.model import Route

SESSION = next(s for s in fixtures.load().sessions if s.name == "coding-agent")
CASES = [("deepseek", "deepseek-v4-flash"), ("openai-chat", "gpt-4.1"), ("anthropic-messages", "claude-sonnet-4-5")]


def _parent_body(dialect: str, model: str) -> bytes:
    d = wire.get(dialect)
    return d.render(replace(SESSION.history, route=Route(d.provider, model)))


@pytest.mark.parametrize("dialect,model", CASES)
def test_one_shot_child_is_the_reference_rendering(tmp_path, dialect, model):
    parent = tmp_path / "parent.json"
    parent.write_bytes(_parent_body(dialect, model))
    out = tmp_path / "child.json"
    assert cli.main(["fork", str(parent), "--variant", "one-shot-fork", "--directive", "review it",
                     "--provider", dialect, "--out", str(out)]) == 0
    d = wire.get(dialect)
    expected = d.render(compose.get_variant("one-shot-fork").apply(d.parse(parent.read_bytes()), "review it"))
    assert out.read_bytes() == expected
    result = diff.compare(parent.read_bytes(), out.read_bytes(), dialect=dialect)
    assert result.view.segment is not None and result.view.segment[0] == "message"


def test_provider_is_detected_when_absent(tmp_path, capsysbinary):
    parent = tmp_path / "parent.json"
    parent.write_bytes(_parent_body("anthropic-messages", "claude-sonnet-4-5"))
    assert cli.main(["fork", str(parent), "--variant", "claude-placeholder-fork", "--directive", "go"]) == 0
    body = capsysbinary.readouterr().out
    d = wire.get("anthropic-messages")
    assert body == d.render(compose.get_variant("claude-placeholder-fork").apply(d.parse(parent.read_bytes()), "go"))
    # the placeholder child starts with the parent's bytes up to its last message
    assert diff.compare(parent.read_bytes(), body, dialect="anthropic-messages").cause.kind == "appended_only"


def test_continuable_child_breaks_the_head(tmp_path, capsysbinary):
    parent = tmp_path / "parent.json"
    body = _parent_body("deepseek", "deepseek-v4-flash")
    parent.write_bytes(body)
    assert cli.main(["fork", str(parent), "--variant", "continuable-fork", "--directive", "go"]) == 0
    child = capsysbinary.readouterr().out
    result = diff.compare(body, child, dialect="deepseek")
    assert result.view.segment[0] in ("tools", "system")
    assert b'"name":"report"' in child


def test_route_change_uses_alt_model(tmp_path, capsysbinary):
    parent = tmp_path / "parent.json"
    parent.write_bytes(_parent_body("openai-chat", "gpt-4.1"))
    assert cli.main(["fork", str(parent), "--variant", "route-change", "--directive", "go",
                     "--alt-model", "gpt-4o-mini"]) == 0
    assert b'"model":"gpt-4o-mini"' in capsysbinary.readouterr().out


def test_errors_exit_2(tmp_path, capsys):
    bad = tmp_path / "bad.json"
    bad.write_text("{", "utf-8")
    assert cli.main(["fork", str(bad), "--variant", "one-shot-fork", "--directive", "x"]) == 2
    good = tmp_path / "p.json"
    good.write_bytes(_parent_body("deepseek", "deepseek-v4-flash"))
    assert cli.main(["fork", str(good), "--variant", "nope", "--directive", "x"]) == 2
    assert cli.main(["fork", str(tmp_path / "missing.json"), "--variant", "spawn", "--directive", "x"]) == 2
    err = capsys.readouterr().err
    assert "bad.json" in err and "unknown variant" in err and "missing.json" in err
