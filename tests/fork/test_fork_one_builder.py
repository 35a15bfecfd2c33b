"""One builder, one child: ``fidelity fork`` on a captured parent body makes
the child the report scores for the same variant, history and provider.

The fork command starts from wire bytes, where a Chat Completions system
prompt is a message; the report starts from the fixtures, where it is system
blocks. ``continuable-fork`` adds a system section: before the fix the
command put it in a second system message ahead of the original, the report
appended it to the system blocks, and the README's worked example and table
disagreed (26,112 against 21,120 lost tokens). A Responses body holds one
item per message and per function call; its parse merges them back into one
assistant turn, so that case holds too.
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest

from fidelity import compose, fixtures, wire
from fidelity.cli import main
from fidelity.model import Route

FX = fixtures.load(None)
CASES = [(p.dialect, s.name) for p in FX.providers for s in FX.sessions]


@pytest.mark.parametrize("dialect,session", CASES)
def test_fork_command_makes_the_reports_child(tmp_path: Path, dialect: str, session: str) -> None:
    setup = next(p for p in FX.providers if p.dialect == dialect)
    sess = next(s for s in FX.sessions if s.name == session)
    d = wire.get(dialect)
    history = replace(sess.history, route=Route(d.provider, setup.model))
    variant = next(v for v in compose.load_variants_from_bytes(FX.compositions) if v.name == "continuable-fork")
    reports_child = d.render(variant.children(history, (sess.directive,), {"model": setup.model,
                                                                            "alt_model": setup.alt_model})[0])
    parent = tmp_path / "parent.json"
    parent.write_bytes(d.render(history))
    out = tmp_path / "child.json"
    assert main(["fork", str(parent), "--variant", "continuable-fork", "--directive", sess.directive,
                 "--provider", dialect, "--out", str(out)]) == 0
    assert out.read_bytes() == reports_child
    assert reports_child.count(b"# Reporting") == 1


def test_system_message_becomes_blocks_only_when_it_is_plain_text() -> None:
    from fidelity.model import Message, Request, Text

    plain = Request(Route("openai", "gpt-4o"), messages=(Message("system", (Text("a"), Text("b"))),
                                                          Message("user", (Text("hi"),))))
    lifted = compose.system_from_messages(plain)
    assert [b.text for b in lifted.system] == ["a", "b"] and [m.role for m in lifted.messages] == ["user"]
    two = replace(plain, messages=(Message("system", (Text("a"),)),) + plain.messages)
    assert compose.system_from_messages(two) is two  # two system messages would render as one
