"""The pytest plugin, run inside pytest's own ``pytester``: failure texts,
snapshot creation, byte-exact mismatch, ``--fidelity-update`` and unused
snapshots (syrupy's conventions)."""

from __future__ import annotations

import importlib.metadata
import json

import pytest

from fidelity.pytest_plugin import PrefixNotPreserved, assert_prefix_preserved

pytest_plugins = ["pytester"]

_READ = {"type": "function", "function": {"name": "read_file", "description": "Read a file",
                                           "parameters": {"type": "object", "properties": {"path": {"type": "string"}}}}}
_REPORT = {"type": "function", "function": {"name": "report", "description": "Report to the parent",
                                             "parameters": {"type": "object", "properties": {"text": {"type": "string"}}}}}
_HISTORY = [{"role": "system", "content": "You are a careful coding agent. " * 120},
            {"role": "user", "content": "Explain the layout of this repository. " * 60}]


def _body(tools: list, extra: list | None = None) -> bytes:
    obj = {"model": "gpt-4o", "messages": _HISTORY + (extra or []), "tools": tools}
    return json.dumps(obj, separators=(",", ":"), ensure_ascii=False).encode()


def _plugin_args() -> list[str]:
    """``-p fidelity.pytest_plugin`` unless the pytest11 entry point loads it."""
    eps = importlib.metadata.entry_points(group="pytest11")
    if any(ep.value == "fidelity.pytest_plugin" for ep in eps):
        return []
    return ["-p", "fidelity.pytest_plugin"]


def test_appended_child_passes() -> None:
    parent = _body([_READ])
    child = _body([_READ], [{"role": "assistant", "content": "Done."}])
    result = assert_prefix_preserved(parent, child, provider="openai-chat")
    assert result.cause.kind == "appended_only" and result.cache.lost == 0


def test_added_tool_fails_with_explanation() -> None:
    parent = _body([_READ])
    child = _body([_REPORT, _READ], [{"role": "user", "content": "go on"}])
    with pytest.raises(PrefixNotPreserved) as info:
        assert_prefix_preserved(parent, child, provider="openai-chat")
    text = str(info.value)
    assert "tools_changed" in text and "report" in text
    assert "segment: tools[0]" in text and "pointer: /tools/0" in text
    assert "parent: " in text and "child:  " in text
    assert f"lost: {info.value.result.cache.lost:,} cached tokens" in text
    assert info.value.result.cache.lost > 0


def test_failure_message_inside_pytest(pytester: pytest.Pytester) -> None:
    parent, child = _body([_READ]), _body([_REPORT, _READ])
    pytester.makepyfile(test_fork=f"""
        from fidelity.pytest_plugin import assert_prefix_preserved
        def test_fork():
            assert_prefix_preserved({parent!r}, {child!r}, provider="openai-chat")
    """)
    result = pytester.runpytest(*_plugin_args())
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(["*PrefixNotPreserved: prefix not preserved (openai-chat, gpt-4o): tools_changed*report*",
                                 "*segment: tools[[]0[]]*pointer: /tools/0*",
                                 "*lost: * cached tokens of *"])


_SNAP_TESTS = """
    import json
    def test_body(fidelity_snapshot):
        fidelity_snapshot.assert_match(json.dumps({"model": "gpt-4o", "messages": [{"role": "user", "content": "%s"}]},
                                                  separators=(",", ":")).encode())
    def test_eq(fidelity_snapshot):
        assert fidelity_snapshot == b'{"model":"gpt-4o","messages":[]}'
"""


def test_snapshot_missing_then_written_then_exact(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(test_snap=_SNAP_TESTS % "hi")
    first = pytester.runpytest(*_plugin_args())
    first.assert_outcomes(failed=2)
    first.stdout.fnmatch_lines(["*does not exist*", "*Re-run pytest with --fidelity-update to create it*"])

    written = pytester.runpytest(*_plugin_args(), "--fidelity-update")
    written.assert_outcomes(passed=2)
    written.stdout.fnmatch_lines(["*fidelity snapshots*", "*2 snapshot(s) written*", "*new: *test_body.json"])
    stored = pytester.path / "__snapshots__" / "test_snap" / "test_body.json"
    assert stored.read_bytes() == b'{"model":"gpt-4o","messages":[{"role":"user","content":"hi"}]}'

    again = pytester.runpytest(*_plugin_args())
    again.assert_outcomes(passed=2)
    again.stdout.fnmatch_lines(["*2 snapshot(s) passed*"])


def test_snapshot_mismatch_names_the_byte(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(test_snap=_SNAP_TESTS % "hi")
    pytester.runpytest(*_plugin_args(), "--fidelity-update").assert_outcomes(passed=2)
    pytester.makepyfile(test_snap=_SNAP_TESTS % "ho")
    result = pytester.runpytest(*_plugin_args())
    result.assert_outcomes(failed=1, passed=1)
    offset = b'{"model":"gpt-4o","messages":[{"role":"user","content":"h'.__len__()
    result.stdout.fnmatch_lines([f"*first divergent byte: {offset} (snapshot 62 bytes, body 62 bytes)*",
                                 "*messages_rewritten*",
                                 "*Re-run pytest with --fidelity-update to accept the new body*"])
    updated = pytester.runpytest(*_plugin_args(), "--fidelity-update")
    updated.assert_outcomes(passed=2)
    updated.stdout.fnmatch_lines(["*1 snapshot(s) updated*"])
    assert b'"ho"' in (pytester.path / "__snapshots__" / "test_snap" / "test_body.json").read_bytes()


def test_eq_failure_uses_assertrepr(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(test_snap=_SNAP_TESTS % "hi")
    pytester.runpytest(*_plugin_args(), "--fidelity-update")
    stored = pytester.path / "__snapshots__" / "test_snap" / "test_eq.json"
    stored.write_bytes(b'{"model":"gpt-4o","messages":[ ]}')
    result = pytester.runpytest(*_plugin_args(), "-k", "test_eq")
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(["*request body differs from fidelity snapshot*test_eq.json*",
                                 "*first divergent byte: 30*"])


def test_unused_snapshots_listed_fail_and_are_deleted_on_update(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(test_snap=_SNAP_TESTS % "hi")
    pytester.runpytest(*_plugin_args(), "--fidelity-update")
    orphan = pytester.path / "__snapshots__" / "test_snap" / "test_gone.json"
    orphan.write_bytes(b"{}")
    extra = pytester.path / "__snapshots__" / "test_snap" / "test_body.1.json"
    extra.write_bytes(b"{}")

    result = pytester.runpytest(*_plugin_args())
    result.assert_outcomes(passed=2)
    assert result.ret == pytest.ExitCode.TESTS_FAILED
    result.stdout.fnmatch_lines(["*2 snapshot(s) unused*", "*unused: *test_body.1.json", "*unused: *test_gone.json",
                                 "*Re-run pytest with --fidelity-update to delete unused snapshots*"])

    warned = pytester.runpytest(*_plugin_args(), "--fidelity-warn-unused")
    assert warned.ret == pytest.ExitCode.OK

    # a partial run (-k) must not call other tests' snapshots unused
    partial = pytester.runpytest(*_plugin_args(), "-k", "test_eq")
    partial.stdout.no_fnmatch_line("*unused: *test_body.json")

    cleaned = pytester.runpytest(*_plugin_args(), "--fidelity-update")
    assert cleaned.ret == pytest.ExitCode.OK
    cleaned.stdout.fnmatch_lines(["*deleted: *test_gone.json"])
    assert not orphan.exists() and not extra.exists()
    assert (pytester.path / "__snapshots__" / "test_snap" / "test_body.json").exists()
