"""Hostile and broken input: every entry point fails clearly, loses nothing.

Each bad input must give exit code 2 (or :class:`InputError` from a reader)
and exactly one line that names the file (and the line or JSON pointer
where known); no traceback unless ``--debug``; the input files are never
modified (hashed before and after). The table in ``docs/hostile-input.md``
lists what happens for each input.
"""

from __future__ import annotations

import contextlib
import hashlib
import io
import json
import os
import tempfile
from collections.abc import Callable
from pathlib import Path

import pytest

from fidelity import gate, jsonio, pricing, sources, wire
from fidelity.canonical import load_request
from fidelity.capture import snapshot
from fidelity.capture.importers import import_file
from fidelity.cli import main
from fidelity.errors import FidelityError, InputError

GOOD = b'{"model":"gpt-4o","messages":[{"role":"user","content":"hi"}]}'
CHILD = b'{"model":"gpt-4o","messages":[{"role":"user","content":"hi"},{"role":"assistant","content":"yo"}]}'

#: name -> (bytes, fragment the one-line error must contain)
BAD: dict[str, tuple[bytes, str]] = {
    "not_json": (b"hello world", "not valid JSON"),
    "truncated": (GOOD[:30], "not valid JSON"),
    "empty": (b"", "empty"),
    "whitespace": (b"  \n\t ", "empty"),
    "binary": (bytes(range(255, -1, -1)), "not UTF-8"),
    "invalid_utf8": (GOOD.replace(b"hi", b"\xff\xfe"), "not UTF-8: invalid byte 0xff at offset 56"),
    "bom": (b"\xef\xbb\xbf" + GOOD, "byte order mark"),
    "nan": (GOOD.replace(b'"messages"', b'"temperature":NaN,"messages"'), "NaN is not JSON"),
    "infinity": (GOOD.replace(b'"messages"', b'"temperature":-Infinity,"messages"'), "-Infinity is not JSON"),
    "float_overflow": (GOOD.replace(b'"messages"', b'"temperature":1e400,"messages"'), "out of range"),
    "int_5000_digits": (GOOD.replace(b'"messages"', b'"seed":' + b"9" * 5000 + b',"messages"'), "digits"),
    "deep_arrays": (b"[" * 10_000 + b"]" * 10_000, "nested more than 256 levels"),
    "deep_objects": (b'{"a":' * 10_000 + b"1" + b"}" * 10_000, "nested more than 256 levels"),
    "duplicate_key": (GOOD.replace(b'"messages"', b'"model":"gpt-4o-mini","messages"'), "duplicate key 'model'"),
}

#: accepted on purpose (documented): exact big integers and lone surrogate escapes
ACCEPTED = {
    "int_beyond_64_bits": GOOD.replace(b'"messages"', b'"seed":123456789012345678901234567890,"messages"'),
    "lone_surrogate_escape": GOOD.replace(b"hi", b"\\ud800"),
}


def _sha(paths: list[Path]) -> dict[Path, str]:
    return {p: hashlib.sha256(p.read_bytes()).hexdigest() for p in paths if p.is_file()}


def run_cli(fn: Callable[[list[str]], int], argv: list[str]) -> tuple[int, str, bytes]:
    """Run an entry point in-process: (exit code, stderr, stdout bytes)."""
    err = io.StringIO()
    raw = io.BytesIO()
    out = io.TextIOWrapper(raw, encoding="utf-8")
    try:
        with contextlib.redirect_stderr(err), contextlib.redirect_stdout(out):
            rc = fn(argv)
    except SystemExit as exc:  # argparse
        rc = int(exc.code or 0)
    out.flush()
    return rc, err.getvalue(), raw.getvalue()


def assert_one_line(stderr: str, path: Path, fragment: str) -> None:
    lines = stderr.strip().splitlines()
    assert len(lines) == 1, stderr
    assert "Traceback" not in stderr
    assert str(path) in lines[0], lines[0]
    assert fragment in lines[0], lines[0]


@pytest.fixture
def work(tmp_path: Path) -> Path:
    (tmp_path / "good.json").write_bytes(GOOD)
    (tmp_path / "child.json").write_bytes(CHILD)
    report = {"schema": "fidelity.report/1", "rows": [{"session": "f", "variant": "v", "provider": "openai-chat",
                                                        "tokens": {"lost": 3}, "cost": None}]}
    (tmp_path / "report.json").write_text(json.dumps(report))
    (tmp_path / "cfg.toml").write_text("")
    rc, err, _ = run_cli(main, ["gate", "--report", str(tmp_path / "report.json"), "--update-baseline",
                                "--baseline", str(tmp_path / "base.json"), "--config", str(tmp_path / "cfg.toml")])
    assert rc == 0, err
    return tmp_path


def _entry_points(w: Path) -> dict[str, Callable[[Path], list[str]]]:
    gate_args = ["--config", str(w / "cfg.toml")]
    return {
        "diff parent": lambda p: ["diff", str(p), str(w / "child.json")],
        "diff child --json": lambda p: ["diff", str(w / "good.json"), str(p), "--json"],
        "diff --provider": lambda p: ["diff", str(p), str(w / "child.json"), "--provider", "openai-chat"],
        "render": lambda p: ["render", "--provider", "openai-chat", str(p)],
        "gate --report": lambda p: ["gate", "--report", str(p), "--baseline", str(w / "base.json"), *gate_args],
        "gate --baseline": lambda p: ["gate", "--report", str(w / "report.json"), "--baseline", str(p), *gate_args],
        "diff --prices": lambda p: ["diff", str(w / "good.json"), str(w / "child.json"), "--prices", str(p)],
    }


READERS: dict[str, Callable[[Path], object]] = {
    "dsh.read_session": sources.read_session,
    "read_openai_messages": sources.read_openai_messages,
    "read_anthropic_messages": sources.read_anthropic_messages,
    "read_gemini_history": sources.read_gemini_history,
    "pricing.load": pricing.load,
    "gate.load_baseline": gate.load_baseline,
    "canonical.load_request": load_request,
    "jsonio.load": jsonio.load,
    "import har": lambda p: import_file(p, "har"),
    "import cassette (JSON)": lambda p: import_file(p, "cassette"),
    "import jsonl": lambda p: import_file(p, "jsonl"),
}

ENTRY_NAMES = ["diff parent", "diff child --json", "diff --provider", "render", "gate --report",
               "gate --baseline", "diff --prices"]


@pytest.mark.parametrize("entry", ENTRY_NAMES)
@pytest.mark.parametrize("case", sorted(BAD))
def test_cli_bad_input_is_one_line_exit_2(work: Path, entry: str, case: str) -> None:
    data, fragment = BAD[case]
    bad = work / f"{case}.json"
    bad.write_bytes(data)
    before = _sha(list(work.iterdir()))
    rc, err, out = run_cli(main, _entry_points(work)[entry](bad))
    assert rc == 2, (err, out[:200])
    if case in ("empty", "whitespace") and entry in ("diff parent", "diff child --json", "diff --provider"):
        fragment = "empty file"
    assert_one_line(err, bad, fragment)
    assert _sha(list(work.iterdir())) == before  # inputs untouched, nothing half-written


@pytest.mark.parametrize("reader", sorted(READERS))
@pytest.mark.parametrize("case", sorted(BAD))
def test_readers_raise_one_line_input_error(tmp_path: Path, reader: str, case: str) -> None:
    data, fragment = BAD[case]
    bad = tmp_path / f"{case}.json"
    bad.write_bytes(data)
    with pytest.raises(InputError) as info:
        READERS[reader](bad)
    text = str(info.value)
    assert "\n" not in text and str(bad) in text
    if reader == "import cassette (JSON)" and not data.startswith(b"{") and not case.startswith("deep_"):
        fragment = "YAML" if case in ("binary", "whitespace") else "not a vcrpy cassette"  # read as a YAML cassette
    if not (case in ("empty", "whitespace") and reader in ("dsh.read_session", "import jsonl")):
        assert fragment in text, text
    assert bad.read_bytes() == data


@pytest.mark.parametrize("dialect", sorted(set(wire.names())))
@pytest.mark.parametrize("case", sorted(BAD))
def test_wire_parse_and_cache_view_refuse_cleanly(dialect: str, case: str) -> None:
    d = wire.get(dialect)
    for fn in (d.parse, d.cache_view):
        with pytest.raises(InputError) as info:
            fn(BAD[case][0])
        assert "\n" not in str(info.value)


def test_duplicate_key_names_the_pointer(tmp_path: Path) -> None:
    body = b'{"model":"m","messages":[{"role":"user","content":"a","content":"b"}]}'
    with pytest.raises(InputError) as info:
        jsonio.loads(body, path="x.json")
    assert info.value.pointer == "/messages/0" and "'content'" in info.value.problem
    nested = b'{"a":{"b~/c":{"k":1,"k":2}}}'
    with pytest.raises(InputError) as info:
        jsonio.loads(nested)
    assert info.value.pointer == "/a/b~0~1c"
    # the same rule in every reader: the wire scanner, snapshots, JSONL, YAML cassettes
    with pytest.raises(InputError, match="duplicate key"):
        wire.get("openai-chat").cache_view(body)
    snap = tmp_path / "0001-x.snapshot"
    snap.write_bytes(b'{"fidelity_snapshot":1,"seq":1,"seq":2,"body_length":2}\n{}')
    with pytest.raises(InputError, match="duplicate key 'seq'"):
        snapshot.read(snap)
    log = tmp_path / "log.jsonl"
    log.write_bytes(GOOD + b"\n" + body + b"\n")
    with pytest.raises(InputError) as info:
        import_file(log, "jsonl")
    assert ":2" in str(info.value) and info.value.pointer == "/messages/0"
    pytest.importorskip("yaml")
    cas = tmp_path / "c.yaml"
    cas.write_text("interactions:\n- request:\n    body: x\n    body: y\n    uri: http://a\nversion: 1\n")
    with pytest.raises(InputError) as info:
        import_file(cas, "cassette")
    assert info.value.line == 4 and "duplicate key 'body'" in str(info.value)


@pytest.mark.parametrize("case", sorted(ACCEPTED))
def test_big_ints_and_lone_surrogate_escapes_are_accepted_exactly(tmp_path: Path, case: str) -> None:
    body = ACCEPTED[case]
    obj = jsonio.loads(body)
    if case == "int_beyond_64_bits":
        assert obj["seed"] == 123456789012345678901234567890  # exact, not a float
    (tmp_path / "p.json").write_bytes(body)
    (tmp_path / "c.json").write_bytes(body)
    rc, err, out = run_cli(main, ["diff", str(tmp_path / "p.json"), str(tmp_path / "c.json"), "--json"])
    assert rc == 0, err
    assert json.loads(out)["raw"]["identical"] is True


def test_missing_file_and_directory(work: Path) -> None:
    missing = work / "absent.json"
    for argv in (["diff", str(missing), str(work / "child.json")], ["render", "-p", "openai-chat", str(missing)],
                 ["gate", "--report", str(missing), "--baseline", str(work / "base.json")]):
        rc, err, _ = run_cli(main, argv)
        assert rc == 2
        assert_one_line(err, missing, "no such file")
    folder = work / "adir"
    folder.mkdir()
    rc, err, _ = run_cli(main, ["render", "-p", "openai-chat", str(folder)])
    assert rc == 2
    assert_one_line(err, folder, "is a directory")
    rc, err, _ = run_cli(main, ["diff", str(work / "good.json"), str(folder)])
    assert rc == 2
    assert_one_line(err, folder, "is a directory")
    for reader in READERS.values():
        with pytest.raises(InputError, match="no such file|no such directory|no baseline"):
            reader(missing)


def test_unreadable_file(work: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    locked = work / "locked.json"
    locked.write_bytes(GOOD)
    real = Path.read_bytes

    def deny(self: Path) -> bytes:
        if self.name == "locked.json":
            raise PermissionError(13, "Permission denied", str(self))
        return real(self)

    monkeypatch.setattr(Path, "read_bytes", deny)  # works when tests run as root too
    rc, err, _ = run_cli(main, ["diff", str(locked), str(work / "child.json")])
    assert rc == 2
    assert_one_line(err, locked, "permission denied")
    rc, err, _ = run_cli(main, ["render", "-p", "openai-chat", str(locked)])
    assert rc == 2
    assert_one_line(err, locked, "permission denied")


@pytest.mark.skipif(os.name != "posix", reason="POSIX file modes")
def test_unreadable_file_for_real(work: Path) -> None:
    """A real mode-0 file, read without root privileges: as root (CI
    containers read any file), the command runs with the effective user
    ``nobody`` (after one warm-up run as root, so that every module and data
    file it needs is already loaded), then root is restored."""
    folder = Path(tempfile.mkdtemp(prefix="fidelity-locked-"))
    try:
        folder.chmod(0o755)
        locked, child = folder / "locked.json", folder / "child.json"
        locked.write_bytes(GOOD)
        child.write_bytes((work / "child.json").read_bytes())
        locked.chmod(0)
        if os.geteuid() == 0:
            import pwd

            assert run_cli(main, ["diff", str(work / "good.json"), str(child)])[0] == 0  # warm-up as root
            os.seteuid(pwd.getpwnam("nobody").pw_uid)
            try:
                rc, err, _ = run_cli(main, ["diff", str(locked), str(child)])
            finally:
                os.seteuid(0)
        else:
            rc, err, _ = run_cli(main, ["diff", str(locked), str(child)])
        assert rc == 2, err
        assert_one_line(err, locked, "permission denied")
    finally:
        for f in folder.iterdir():
            f.chmod(0o644)
            f.unlink()
        folder.rmdir()


def test_unknown_provider_model_and_tokenizer(work: Path) -> None:
    rc, err, _ = run_cli(main, ["diff", str(work / "good.json"), str(work / "child.json"), "--provider", "nope"])
    assert rc == 2 and "unknown provider 'nope'" in err and len(err.strip().splitlines()) == 1
    rc, err, _ = run_cli(main, ["render", "--provider", "nope", str(work / "good.json")])
    assert rc == 2 and "unknown provider 'nope'" in err
    # an unknown model still diffs (tokenizer from the provider) and says it has no price
    rc, err, out = run_cli(main, ["diff", str(work / "good.json"), str(work / "child.json"), "--model", "nope-1",
                                  "--json"])
    assert rc == 0, err
    assert json.loads(out)["cost"] is None and "nope-1" in json.loads(out)["cost_note"]
    # with a provider that has no tokenizer default the model must resolve
    from fidelity import tokens
    from fidelity.errors import UnknownName

    with pytest.raises(UnknownName, match="nope-1"):
        tokens.for_model("nope-1")
    with pytest.raises(UnknownName, match="tokenizer"):
        tokens.get("no-such-tokenizer")


def test_wrong_shape_for_the_declared_provider(work: Path) -> None:
    gemini = work / "gemini.json"
    gemini.write_bytes(b'{"contents":[{"role":"user","parts":[{"text":"hi"}]}]}')
    for provider in ("openai-chat", "anthropic-messages", "openai-responses"):
        rc, err, _ = run_cli(main, ["diff", str(gemini), str(gemini), "--provider", provider, "--model", "gpt-4o"])
        assert rc == 2, (provider, err)
        assert_one_line(err, gemini, f"not a {provider} request body")
    bad = work / "bad.json"
    bad.write_bytes(b'{"model":"gpt-4o","messages":"hi"}')
    rc, err, _ = run_cli(main, ["diff", str(bad), str(bad), "--provider", "openai-chat"])
    assert rc == 2
    assert_one_line(err, bad, "not a openai-chat request body")


def test_har_and_cassette_with_missing_fields(tmp_path: Path) -> None:
    har = tmp_path / "x.har"
    cases = {
        '{"log":{}}': "log.entries",
        '{"log":{"entries":[1]}}': "/log/entries/0",
        '{"log":{"entries":[{"request":{"postData":{"text":' + json.dumps(GOOD.decode()) + '}}}]}}': "no url",
        '{"log":{"entries":[{"request":{"url":"http://a","headers":{},"postData":{"text":'
        + json.dumps(GOOD.decode()) + '}}}]}}': "headers must be a list",
        '{"log":{"entries":[{"request":{"url":"http://a","postData":{"encoding":"base64","text":"%%%"}}}]}}':
            "base64",
    }
    for text, fragment in cases.items():
        har.write_text(text)
        rc, err, _ = run_cli(main, ["import", str(har), str(tmp_path / "out")])
        assert rc == 2, text
        assert_one_line(err, har, fragment)
    cas = tmp_path / "c.json"
    for text, fragment in {
        '{"version":1}': "interactions",
        '{"version":1,"interactions":[{"response":{}}]}': "/interactions/0/request",
        '{"version":1,"interactions":[{"request":{"body":' + json.dumps(GOOD.decode()) + '}}]}': "no uri",
        '{"version":1,"interactions":[{"request":{"uri":"u","body":5}}]}': "text or bytes",
    }.items():
        cas.write_text(text)
        rc, err, _ = run_cli(main, ["import", str(cas), str(tmp_path / "out"), "--kind", "cassette"])
        assert rc == 2, text
        assert_one_line(err, cas, fragment)
    assert not (tmp_path / "out").exists() or not any((tmp_path / "out").iterdir())


DSH_HEAD = '{"type":"session","version":0,"id":"s-1","createdAt":0,"cwd":"/w","delegationDepth":0}\n'


def test_session_log_turn_that_never_ends_and_orphan_result(tmp_path: Path) -> None:
    never = tmp_path / "session.jsonl"
    never.write_text(DSH_HEAD + '{"type":"turn/start","data":{"turn":1}}\n'
                     '{"type":"turn/start","data":{"turn":2}}\n')
    with pytest.raises(InputError) as info:
        sources.read_session(never)
    assert info.value.line == 3 and "still open" in info.value.problem
    rc, err, _ = run_cli(main, ["import", str(never), str(tmp_path / "out"), "--kind", "dsh"])
    assert rc == 2
    assert_one_line(err, never, "still open")
    orphan = tmp_path / "o" / "session.jsonl"
    orphan.parent.mkdir()
    orphan.write_text(DSH_HEAD + '{"type":"turn/start","data":{"turn":1}}\n'
                      '{"type":"tool/result","data":{"turn":1,"step":1,"message":{"source":{"kind":"tool",'
                      '"callId":"call_9"},"content":[{"type":"tool-result","toolCallId":"call_9","content":[]}],'
                      '"role":"user","id":"r1"}},"surfaceOp":"append"}\n')
    with pytest.raises(InputError) as info:
        sources.read_session(orphan)
    assert info.value.line == 3 and "call_9" in info.value.problem
    rc, err, _ = run_cli(main, ["import", str(orphan), str(tmp_path / "out2"), "--kind", "dsh"])
    assert rc == 2
    assert_one_line(err, orphan, "call_9")


def test_snapshot_metadata_of_the_wrong_type(tmp_path: Path) -> None:
    for meta, fragment in {
        b'{"fidelity_snapshot":1,"body_length":2,"provider":5}': "provider must be a string",
        b'{"fidelity_snapshot":1,"body_length":2,"notes":5}': "notes must be a list",
        b'{"fidelity_snapshot":1,"body_length":2,"parent":[1]}': "parent must be",
        b'{"fidelity_snapshot":1,"body_length":2,"seq":true}': "seq must be an integer",
        b'{"fidelity_snapshot":1,"body_length":2,"body_sha256":"00"}': "body_sha256",
        b'{"fidelity_snapshot":1,"body_length":9}': "truncated",
    }.items():
        p = tmp_path / "0001-x.snapshot"
        p.write_bytes(meta + b"\n{}")
        rc, err, _ = run_cli(main, ["diff", str(p), str(p)])
        assert rc == 2, meta
        assert_one_line(err, p, fragment)


def test_bad_file_in_a_snapshot_folder_names_that_file(tmp_path: Path) -> None:
    (tmp_path / "1.json").write_bytes(GOOD)
    (tmp_path / "2.json").write_bytes(CHILD)
    (tmp_path / "3.json").write_bytes(BAD["duplicate_key"][0])
    rc, err, _ = run_cli(main, ["diff", str(tmp_path)])
    assert rc == 2
    assert_one_line(err, tmp_path / "3.json", "duplicate key")
    rc, err, _ = run_cli(main, ["gate", "--snapshots", str(tmp_path), "--baseline", str(tmp_path / "b.json"),
                                "--update-baseline", "--config", str(tmp_path / "none.toml")])
    assert rc == 2
    assert_one_line(err, tmp_path / "3.json", "duplicate key")
    assert not (tmp_path / "b.json").exists()


def test_debug_adds_the_traceback(work: Path) -> None:
    bad = work / "bad.json"
    bad.write_bytes(b"{")
    rc, err, _ = run_cli(main, ["--debug", "diff", str(bad), str(work / "child.json")])
    assert rc == 2 and "Traceback" in err and err.strip().splitlines()[-1].startswith("fidelity diff: error:")


# -- nothing half-written ------------------------------------------------------------


def test_atomic_write_leaves_old_content_on_failure(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    target = tmp_path / "baseline.json"
    target.write_bytes(b"old")

    def boom(*_a: object) -> None:
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(os, "replace", boom)
    with pytest.raises(OSError):
        jsonio.atomic_write(target, b"new" * 1000)
    assert target.read_bytes() == b"old"
    assert sorted(p.name for p in tmp_path.iterdir()) == ["baseline.json"]  # no temp file left


def test_atomic_write_interrupted_mid_write(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    target = tmp_path / "snap.snapshot"
    real_fsync = os.fsync

    def interrupted(fd: int) -> None:
        raise KeyboardInterrupt

    monkeypatch.setattr(os, "fsync", interrupted)
    with pytest.raises(KeyboardInterrupt):
        jsonio.atomic_write(target, b"x" * 10_000)
    monkeypatch.setattr(os, "fsync", real_fsync)
    assert not target.exists() and list(tmp_path.iterdir()) == []
    jsonio.atomic_write(target, b"ok")
    assert target.read_bytes() == b"ok" and oct(target.stat().st_mode & 0o777) != "0o600"


def test_gate_baseline_and_junit_are_written_atomically(work: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    calls: list[str] = []
    real = jsonio.atomic_write

    def spy(path: object, data: bytes) -> None:
        calls.append(str(path))
        real(path, data)  # type: ignore[arg-type]

    import fidelity.commands.gate as gate_cmd

    monkeypatch.setattr(gate, "atomic_write", spy)
    monkeypatch.setattr(gate_cmd, "atomic_write", spy)
    junit = work / "junit.xml"
    base = work / "b2.json"
    rc, err, _ = run_cli(main, ["gate", "--report", str(work / "report.json"), "--update-baseline",
                                "--baseline", str(base), "--config", str(work / "cfg.toml")])
    assert rc == 0, err
    rc, err, _ = run_cli(main, ["gate", "--report", str(work / "report.json"), "--baseline", str(base),
                                "--junit", str(junit), "--config", str(work / "cfg.toml")])
    assert rc == 0, err
    assert calls == [str(base), str(junit)]


def test_concurrent_atomic_writes_to_one_path(tmp_path: Path) -> None:
    import threading

    target = tmp_path / "same.json"
    payloads = [bytes([65 + i]) * 50_000 for i in range(8)]
    threads = [threading.Thread(target=jsonio.atomic_write, args=(target, data)) for data in payloads]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert target.read_bytes() in payloads  # one whole payload, never a mix
    assert [p.name for p in tmp_path.iterdir()] == ["same.json"]


def test_reader_errors_are_fidelity_errors_not_crashes(tmp_path: Path) -> None:
    bad = tmp_path / "x.json"
    bad.write_bytes(b"\x00" * 64)
    for reader in READERS.values():
        with pytest.raises(FidelityError):
            reader(bad)


def test_render_error_from_the_sdk_rules_names_the_file(tmp_path: Path) -> None:
    req = tmp_path / "r.json"
    req.write_text('{"fidelity":"request/1","route":{"provider":"openai","model":"gpt-4o"},'
                   '"messages":[{"role":"user","parts":[{"type":"text","text":"\\ud800"}]}]}')
    rc, err, out = run_cli(main, ["render", "--provider", "openai-chat", str(req)])
    assert rc == 2 and out == b""
    assert_one_line(err, req, "lone surrogate")


def test_lone_surrogate_in_a_body_string_reaches_the_output_escaped(tmp_path: Path) -> None:
    body = tmp_path / "s.json"
    body.write_bytes(b'{"model":"\\ud800gpt-4o","messages":[{"role":"user","content":"hi"}]}')
    rc, err, out = run_cli(main, ["diff", str(body), str(body), "--json"])
    assert rc == 0, err
    assert json.loads(out)["model"] == "\ud800gpt-4o"
    rc, err, out = run_cli(main, ["diff", str(body), str(body)])
    assert rc == 0, err
    assert b"\\ud800gpt-4o" in out


@pytest.mark.parametrize("behaviour", ["builds it (6.0.3 libyaml)", "refuses it (6.0.4 libyaml)",
                                       "runs out of recursion (pure Python)", "recursive alias"])
def test_deep_yaml_cassette_message_is_the_same_for_every_pyyaml(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                                 behaviour: str) -> None:
    """PyYAML is a declared dependency (>=6.0); what it does with 10,000
    nested flow sequences changed in 6.0.4. The reader says the same thing
    whichever version is installed: each behaviour is simulated here."""
    import yaml

    from fidelity.traffic import _yaml

    deep = tmp_path / "deep.yaml"
    deep.write_bytes(b"[" * 10_000 + b"]" * 10_000)
    if behaviour.startswith("refuses"):
        def compose(data: object, loader: object) -> object:
            raise yaml.scanner.ScannerError("while increasing flow level", None, "exceeded maximum nesting depth", None)
        monkeypatch.setattr(_yaml, "_compose", compose)
    elif behaviour.startswith("runs out"):
        def compose(data: object, loader: object) -> object:
            raise RecursionError("maximum recursion depth exceeded")
        monkeypatch.setattr(_yaml, "_compose", compose)
    elif behaviour.startswith("builds"):
        nested = yaml.nodes.SequenceNode("tag:yaml.org,2002:seq", [])
        for _ in range(10_000):
            nested = yaml.nodes.SequenceNode("tag:yaml.org,2002:seq", [nested])
        monkeypatch.setattr(_yaml, "_compose", lambda data, loader: nested)
    else:
        deep.write_text("&a [*a]\n")
    with pytest.raises(InputError) as info:
        import_file(deep, "cassette")
    assert str(info.value) == f"{deep}: YAML nested more than 256 levels deep"
