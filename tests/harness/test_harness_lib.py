"""The harness library without npm or a network: descriptors, releases,
bisection, the matrix's first-broken column, and one whole capture of a
stand-in harness (a Python script) through the proxy and the upstream."""

from __future__ import annotations

import sys
from pathlib import Path

import orjson
import pytest
from hypothesis import given
from hypothesis import strategies as st

from fidelity import cli
from fidelity.errors import FidelityError, InputError, UnknownName
from fidelity.harness import descriptor, first_change, install, load, load_all, names
from fidelity.harness.capture import capture_kind, capture_release, read_captures, read_pair
from fidelity.harness.drive import DUMMY_KEY
from fidelity.harness.matrix import build_from

FAKE = Path(__file__).parent / "data" / "fake_harness.py"
FAKE_DOC = {
    "title": "Fake", "package": "fake-harness", "registry": "npm", "binary": "fake", "family": "openai",
    "argv": ["{bin}", str(FAKE), "{prompt}"],
    "env": {"FAKE_KEY": "{key}"},
    "files": {"home/.fake/config.json": '{"base_url": "{proxy}"}'},
    "kind": [{"name": "fork", "prompt": "FIDELITY-FORK: fork a child.", "rule": [
        {"name": "child", "when": {"last_contains": "FIDELITY-CHILD"}, "reply": {"text": "Child done."}},
        {"name": "parent", "when": {"last_contains": "FIDELITY-FORK", "has_tool": "agent"}, "times": 1,
         "reply": {"tool_calls": [{"name": "agent", "arguments": {"prompt": "FIDELITY-CHILD: count files"}}]}},
    ]}],
}


def test_bundled_descriptors_load_and_name_their_kinds() -> None:
    found = {d.name: d for d in load_all()}
    assert {"qwen-code", "claude-code", "gemini-cli", "opencode", "kilo-code", "codex-cli"} <= set(found)
    for d in found.values():
        assert d.unsupported or d.kinds, d.name
        for k in d.kinds:  # every kind's script has a parent and a child rule
            assert {r["name"] for r in k.script["rule"]} >= {"parent", "child"}
        assert all("{key}" not in text for _, text in d.files), f"{d.name} would write the key to disk"
    codex = found["codex-cli"]  # its subagent tools are namespaced: the parent rule's call says so
    assert not codex.unsupported and [k.name for k in codex.kinds] == ["fork", "spawn"]
    for k in codex.kinds:
        call = next(r for r in k.script["rule"] if r["name"] == "parent")["reply"]["tool_calls"][0]
        assert (call["name"], call["namespace"]) == ("spawn_agent", "multi_agent_v1")
    assert found["claude-code"].kind("fork").env == (("CLAUDE_CODE_FORK_SUBAGENT", "1"),)


@pytest.mark.parametrize("doc, problem", [
    ({**FAKE_DOC, "colour": "red"}, "unknown key 'colour'"),
    ({**FAKE_DOC, "registry": "cargo"}, "registry must be npm or pypi"),
    ({**FAKE_DOC, "argv": ["{bin}"]}, "argv must hold {prompt}"),
    ({**FAKE_DOC, "kind": [{"name": "k", "prompt": "p", "rule": [{"name": "parent"}]}]}, "rules named parent and child"),
    ({k: v for k, v in FAKE_DOC.items() if k != "kind"}, "needs at least one [[kind]]"),
])
def test_bad_descriptor_names_the_problem(doc: dict, problem: str) -> None:
    with pytest.raises(InputError, match=None) as exc:
        descriptor.parse("fake", doc, path="fake.toml")
    assert problem in str(exc.value) and str(exc.value).startswith("fake.toml")


def test_unknown_harness_and_kind() -> None:
    with pytest.raises(UnknownName, match="unknown harness 'nope'"):
        load("nope")
    with pytest.raises(UnknownName, match="known: fork, general-purpose"):
        load("qwen-code").kind("handoff")
    assert names() == sorted(names())


@given(st.lists(st.tuples(st.integers(0, 30), st.integers(0, 30), st.integers(0, 300)), min_size=1, max_size=12))
def test_stable_releases_are_in_release_order(parts: list[tuple[int, int, int]]) -> None:
    versions = [f"{a}.{b}.{c}" for a, b, c in parts]
    noisy = versions + [v + "-nightly.1" for v in versions] + [v + "-linux-x64" for v in versions]
    got = install.stable(noisy)
    assert got == [f"{a}.{b}.{c}" for a, b, c in sorted(set(parts))]


@given(st.integers(2, 60), st.data())
def test_bisect_finds_the_first_change_in_few_steps(n: int, data: st.DataObject) -> None:
    releases = [f"1.{i}.0" for i in range(n)]
    change = data.draw(st.integers(1, n))  # n: no change in range
    calls: list[str] = []

    def sig(v: str) -> bool:
        calls.append(v)
        return releases.index(v) >= change

    first, judged = first_change(releases, releases[0], releases[-1], sig)
    assert first == (releases[change] if change < n else None)
    assert judged == len(calls) == len(set(calls))  # each release judged once
    assert judged <= 2 + (n - 1).bit_length()


def test_bisect_refuses_bad_ranges() -> None:
    with pytest.raises(FidelityError, match="not in the registry"):
        first_change(["1", "2"], "1", "3", lambda v: v)
    with pytest.raises(FidelityError, match="older release"):
        first_change(["1", "2"], "2", "1", lambda v: v)


def _fake(tmp_path: Path, **env: str) -> descriptor.Descriptor:
    doc = orjson.loads(orjson.dumps(FAKE_DOC))
    doc["env"].update(env)
    return descriptor.parse("fake", doc)


def test_capture_of_a_stand_in_harness_end_to_end(tmp_path: Path) -> None:
    pytest.importorskip("aiohttp")  # the proxy extra
    d = _fake(tmp_path)
    cap = capture_kind(d, "1.0.0", d.kinds[0], Path(sys.executable), tmp_path / "caps")
    assert cap.status == "captured", cap.reason
    meta = orjson.loads(cap.child.read_bytes().split(b"\n", 1)[0])
    assert (meta["seq"], meta["parent"]) == (2, "parent.snapshot")
    # the key reached the upstream (the capture checks it) and no file on disk
    for path in (tmp_path / "caps").rglob("*"):
        assert not path.is_file() or DUMMY_KEY.encode() not in path.read_bytes(), path
    rows = build_from(read_captures(tmp_path / "caps"))["rows"]
    assert [r["provider_id"] for r in rows] == ["dashscope", "deepseek", "openai-chat", "vllm"]
    for r in rows:  # the child drops `agent`, the first tool: the cache parts there
        assert r["verdict"] == "broken" and r["pointer"] == "/tools/0/function/name", r
        assert r["cause"] == "tools_changed" and "tool removed: agent" in r["cause_detail"]
        assert r["lost_tokens"] > 0 and r["kept_tokens"] + r["lost_tokens"] <= r["child_prompt"]
        assert r["first_broken_in"] == "1.0.0" and r["first_broken_exact"] is False


def test_a_pair_is_captured_when_the_proxy_scrubs_a_header_value_out_of_the_body(tmp_path: Path) -> None:
    """Codex sends its session id as a ``session_id`` header and as the body's
    ``prompt_cache_key``: the proxy scrubs the learned value from the snapshot, so the
    snapshot's body is not the received body, and the pair is still found."""
    pytest.importorskip("aiohttp")
    session = "0a1b2c3d-4e5f-6789-abcd-ef0123456789"
    d = _fake(tmp_path, FAKE_SESSION=session)
    cap = capture_kind(d, "1.0.0", d.kinds[0], Path(sys.executable), tmp_path / "caps")
    assert cap.status == "captured", cap.reason
    for body in read_pair(cap):
        assert orjson.loads(body)["prompt_cache_key"] == "[REDACTED]"
        assert session.encode() not in body


def test_first_broken_in_follows_the_release_series(tmp_path: Path) -> None:
    pytest.importorskip("aiohttp")
    d = _fake(tmp_path)
    root = tmp_path / "caps"
    # 1.0.0 keeps every tool (drops one it does not have), 1.1.0 and 1.2.0 drop `write`
    capture_kind(_fake(tmp_path, FAKE_DROP="none"), "1.0.0", d.kinds[0], Path(sys.executable), root)
    for v in ("1.1.0", "1.2.0"):
        capture_kind(_fake(tmp_path, FAKE_DROP="write"), v, d.kinds[0], Path(sys.executable), root)
    rows = [r for r in build_from(read_captures(root))["rows"] if r["provider_id"] == "deepseek"]
    assert [(r["release"], r["verdict"]) for r in rows] == [("1.0.0", "kept"), ("1.1.0", "broken"),
                                                              ("1.2.0", "broken")]
    assert rows[0]["lost_tokens"] == 0 and "first_broken_in" not in rows[0]
    assert all(r["first_broken_in"] == "1.1.0" and r["first_broken_exact"] for r in rows[1:])
    assert rows[1]["cause"] == "tools_changed" and rows[1]["cause_detail"] == "tool removed: write"
    assert rows[1]["pointer"] == rows[2]["pointer"] and rows[1]["lost_tokens"] > 0


def test_a_release_that_does_not_install_is_a_not_run_row(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    def fail(d: object, version: str) -> Path:
        raise FidelityError(f"installing fake-harness@{version} failed: no linux binary")

    monkeypatch.setattr(install, "install", fail)
    caps = capture_release(_fake(tmp_path), "9.9.9", tmp_path / "caps")
    assert [c.status for c in caps] == ["failed"]
    (row,) = build_from(caps)["rows"]
    assert row["verdict"] == "not run" and "no linux binary" in row["note"]


def test_matrix_without_run_on_a_bad_capture_is_one_line_exit_2(tmp_path: Path,
                                                                capsys: pytest.CaptureFixture[str]) -> None:
    bad = tmp_path / "caps" / "fake-1.0.0" / "fork"
    bad.mkdir(parents=True)
    (bad / "capture.toml").write_text("harness = [unclosed\n")
    code = cli.main(["harness", "matrix", "--no-run", "--fixtures", str(tmp_path / "caps"),
                     "--out", str(tmp_path / "out")])
    err = capsys.readouterr().err
    assert code == 2 and err.count("\n") == 1 and "capture.toml: not valid TOML" in err
    assert not (tmp_path / "out").exists()


def test_a_run_without_the_child_fails_with_the_harness_output_in_plain_text() -> None:
    from fidelity.harness.drive import HarnessFailed, Run

    run = Run(1, "\x1b[91m\x1b[1mError: \x1b[0mCannot connect to API", [], {}, [], Path("."), "")
    with pytest.raises(HarnessFailed) as exc:
        run.body_of("child")
    assert str(exc.value) == "the upstream never answered rule 'child' (exit 1): Error: Cannot connect to API"


def test_pre_releases_extra_npm_arguments_and_a_post_install_step(tmp_path: Path,
                                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    """DeepSeek Harness's needs as data: its npm pre-releases are its releases, npm gets
    extra arguments with ``{version}`` filled in, a ``post_install`` command runs in the
    install folder, and a release whose post-install failed is not taken as installed."""
    monkeypatch.setenv("FIDELITY_HARNESS_CACHE", str(tmp_path / "cache"))
    d = descriptor.parse("fake", {**FAKE_DOC, "prereleases": True, "npm_args": ["--legacy-peer-deps", "peer@{version}"],
                                  "post_install": ["{bindir}/node", "{data}/build.mjs", "{prefix}", "{version}"]})
    calls: list[list[str]] = []
    fail_post = [True]

    def fake_run(argv: list[str], timeout: float):  # noqa: ANN202 - a stand-in for subprocess.run's result
        calls.append(argv)
        if argv[0] == "npm" and argv[1] == "view":
            return type("R", (), {"returncode": 0, "stdout": '["0.1.0-rc.6","0.1.0-rc.8","0.1.0","0.2.0-linux-x64"]',
                                  "stderr": ""})()
        if argv[0] == "npm":
            base = Path(argv[argv.index("--prefix") + 1])
            (base / "node_modules" / "fake-harness").mkdir(parents=True, exist_ok=True)
            (base / "node_modules" / "fake-harness" / "package.json").write_text('{"version": "0.1.0-rc.8"}')
            (base / "node_modules" / ".bin").mkdir(exist_ok=True)
            (base / "node_modules" / ".bin" / "fake").write_text("")
            return type("R", (), {"returncode": 0, "stdout": "", "stderr": ""})()
        return type("R", (), {"returncode": 1 if fail_post[0] else 0, "stdout": "", "stderr": "build failed"})()

    monkeypatch.setattr(install, "_run", fake_run)
    assert install.releases(d) == ["0.1.0-rc.6", "0.1.0-rc.8", "0.1.0"]
    with pytest.raises(FidelityError, match="build failed"):
        install.install(d, "0.1.0-rc.8")
    assert calls[1][-3:] == ["--legacy-peer-deps", "peer@0.1.0-rc.8", "fake-harness@0.1.0-rc.8"]
    base = tmp_path / "cache" / "fake@0.1.0-rc.8"
    assert calls[2] == [str(base / "node_modules" / ".bin" / "node"), str(descriptor.FOLDER / "build.mjs"),
                        str(base), "0.1.0-rc.8"]
    assert not install.installed(d, "0.1.0-rc.8")  # the post-install step did not finish
    fail_post[0] = False
    calls.clear()
    assert install.install(d, "0.1.0-rc.8") == base / "node_modules" / ".bin" / "fake"  # tried again, now whole
    assert [c[0] for c in calls] == ["npm", str(base / "node_modules" / ".bin" / "node")]
    assert install.installed(d, "0.1.0-rc.8")
    assert d.argv_for("/x/bin/fake", d.kinds[0])[0] == "/x/bin/fake"
    bindir = descriptor.parse("fake", {**FAKE_DOC, "argv": ["{bindir}/node", "{bin}", "{prompt}"]})
    assert bindir.argv_for("/x/bin/fake", bindir.kinds[0])[:2] == ["/x/bin/node", "/x/bin/fake"]


def test_prune_reads_a_version_with_a_dash(tmp_path: Path) -> None:
    """``NAME-VERSION`` folders where the version holds ``-`` (``0.1.0-rc.8``) and where
    another harness's name starts with this one's: only this harness's old releases go."""
    from fidelity.harness.capture import prune

    for name in ("fake-0.1.0-rc.6", "fake-0.1.0-rc.8", "fake-code-1.0.0", "fake-1.0.0"):
        (tmp_path / name).mkdir()
    prune(descriptor.parse("fake", FAKE_DOC), ["0.1.0-rc.8", "1.0.0"], tmp_path)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["fake-0.1.0-rc.8", "fake-1.0.0", "fake-code-1.0.0"]
