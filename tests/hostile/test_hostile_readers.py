"""Hostile input to the recording readers, import and scan (issue #33):
YAML alias bombs, malformed URLs, gzip bombs, Ctrl-C during a scan, big
integers in DeepSeek Harness tool-call arguments. Each test fails on the
code before its fix; each bad input gives one line naming the file, exit 2
(or the entry set apart with its reason), never a traceback."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from fidelity.cli import main
from fidelity.errors import InputError
from hostile.test_fuzz_inputs import huge_integers
from hostile.test_hostile_inputs import run_cli

yaml = pytest.importorskip("yaml")

BODY = {"model": "gpt-4o", "messages": [{"role": "user", "content": "hi"}]}


def _one_line(rc: int, err: str, path: Path, fragment: str) -> None:
    assert rc == 2, err
    lines = err.strip().splitlines()
    assert len(lines) == 1, err
    assert str(path) in lines[0] and fragment in lines[0], err
    assert "Traceback" not in err


# --------------------------------------------------------------------------- YAML aliases


def alias_bomb(levels: int = 9, fanout: int = 9) -> str:
    """``levels`` anchors, each a list of ``fanout`` aliases of the one before:
    ``fanout ** levels`` values once expanded, a few hundred bytes written."""
    lines = ["a0: &a0 [" + ", ".join(["x"] * fanout) + "]"]
    for i in range(1, levels):
        lines.append(f"a{i}: &a{i} [" + ", ".join([f"*a{i - 1}"] * fanout) + "]")
    lines.append(f"interactions: [*a{levels - 1}]")
    return "\n".join(lines) + "\n"


@pytest.mark.parametrize("command", ["import", "scan", "replay", "tokens-check"])
def test_a_yaml_alias_bomb_is_refused_before_it_expands(tmp_path: Path, command: str) -> None:
    bomb = tmp_path / "bomb.yaml"
    bomb.write_text(alias_bomb())
    assert len(bomb.read_bytes()) < 600
    argv = [command, str(bomb)] + ([str(tmp_path / "out")] if command == "import" else [])
    if command == "scan":
        argv += ["--workers", "1"]
    rc, err, _ = run_cli(main, argv)
    _one_line(rc, err, bomb, "alias bomb")


def test_a_few_aliases_are_read_as_before(tmp_path: Path) -> None:
    """A recorder that writes a header block once as an anchor and again as
    an alias (yaml.dump does, for an object given twice) is read as before."""
    from fidelity.capture.importers import import_file

    body = json.dumps(BODY)
    doc = ("interactions:\n"
           "- request: {method: POST, uri: 'https://api.openai.com/v1/chat/completions',\n"
           "            headers: &h {Content-Type: [application/json]}, body: '" + body + "'}\n"
           "  response: {status: {code: 200}, headers: *h, body: {string: '{}'}}\n")
    src = tmp_path / "c.yaml"
    src.write_text(doc)
    imported = import_file(src)
    assert [s.body for s in imported.snapshots] == [body.encode()]


_tree = st.recursive(st.integers(0, 9).map(str), lambda kids: st.lists(kids, max_size=4), max_leaves=20)


def _count(value: object) -> int:
    if isinstance(value, list):
        return 1 + sum(_count(v) for v in value)
    if isinstance(value, dict):
        return 1 + sum(1 + _count(v) for v in value.values())
    return 1


@given(_tree, st.integers(1, 4))
def test_measure_counts_the_expanded_tree_without_expanding_it(tree: object, copies: int) -> None:
    """The node graph's measure equals the size of the tree PyYAML builds
    once every alias is expanded, whatever the sharing."""
    from fidelity.jsonio import depth
    from fidelity.traffic._yaml import measure

    tree = [tree]  # the alias names a collection (a scalar alias is counted where it occurs)
    text = "a: &a " + json.dumps(tree) + "\nb: [" + ", ".join(["*a"] * copies) + "]\n"
    node = yaml.compose(text, Loader=yaml.SafeLoader)
    distinct, expanded, deep = measure(node)
    value = yaml.safe_load(text)
    assert expanded == _count(value)
    assert deep == depth(value)
    assert distinct == _count({"a": tree, "b": [0] * copies}) - copies


def test_the_bomb_is_measured_as_what_it_would_expand_to() -> None:
    from fidelity.traffic._yaml import load_yaml

    with pytest.raises(InputError) as info:
        load_yaml(alias_bomb(9, 9).encode(), "b.yaml")
    sizes = [10]  # a0: the list and its 9 scalars
    for _ in range(8):
        sizes.append(1 + 9 * sizes[-1])
    expanded = 1 + 10 + sum(sizes) + 1 + sizes[-1]  # the root, its 10 keys, a0..a8, interactions: [*a8]
    assert f"expand 30 nodes to {expanded:,}" in str(info.value)
    # just below the budget is read: 4 levels of 9 = 6,561 leaves
    doc = load_yaml(alias_bomb(4, 9).encode(), "b.yaml")
    assert len(doc["interactions"][0]) == 9


# --------------------------------------------------------------------------- malformed URLs

GOOD_URL = "https://api.openai.com/v1/chat/completions"
SECRET = "sk-secretvalue123456"
#: URL -> what the set-apart reason says (the URL itself never repeated: it may hold a key)
BAD_URLS = {
    "\ud800https://api.openai.com/v1/chat/completions": "lone surrogate",
    "http://[zz::q]/v1/chat/completions": "host in [ ] is not an IP address",
    "http://[::1/v1/chat/completions": "unbalanced [ ]",
    "https://api.openai.com:99999/v1/chat/completions": "port is not a number",
    f"http://[zz::q]/v1/chat/completions?key={SECRET}": "host in [ ] is not an IP address",
}


def _recording(kind: str, urls: list[str], folder: Path) -> Path:
    """A recording of ``kind`` with one chat request per URL."""
    body = json.dumps(BODY)
    if kind == "har":
        entries = [{"request": {"method": "POST", "url": u, "headers": [],
                                "postData": {"mimeType": "application/json", "text": body}}} for u in urls]
        path = folder / "r.har"
        path.write_text(json.dumps({"log": {"version": "1.2", "entries": entries}}))
    elif kind == "jsonl":
        path = folder / "r.jsonl"
        path.write_text("".join(json.dumps({"url": u, "body": body}) + "\n" for u in urls))
    else:
        doc = {"version": 1, "interactions": [
            {"request": {"method": "POST", "uri": u, "headers": {}, "body": body},
             "response": {"status": {"code": 200}, "headers": {}, "body": {"string": "{}"}}} for u in urls]}
        if kind == "cassette-json":
            path = folder / "r.json"
            path.write_text(json.dumps(doc))
        else:
            path = folder / "r.yaml"
            path.write_bytes(yaml.safe_dump(doc, allow_unicode=True).encode("utf-8", "surrogatepass"))
    return path


@pytest.mark.parametrize("kind", ["har", "jsonl", "cassette-json", "cassette-yaml"])
@pytest.mark.parametrize("url", list(BAD_URLS))
def test_import_sets_apart_an_entry_with_a_malformed_url(tmp_path: Path, kind: str, url: str) -> None:
    if kind == "cassette-yaml" and "\ud800" in url:
        pytest.skip("YAML cannot hold a lone surrogate (PyYAML refuses to write it)")
    src = _recording(kind, [GOOD_URL, url, GOOD_URL], tmp_path)
    out = tmp_path / "snaps"
    rc, err, stdout = run_cli(main, ["import", str(src), str(out)])
    assert rc == 0, err
    assert "Traceback" not in err
    written = sorted(out.iterdir())
    assert len(written) == 2  # the good entries on either side are kept
    reason = BAD_URLS[url]
    where = {"har": "/log/entries/1", "jsonl": "line 2"}.get(kind, "/interactions/1/request")
    warning = next(line for line in err.splitlines() if "set apart" in line)
    assert warning.startswith(f"warning: {where}: set apart: malformed URL: ") and reason in warning, err
    assert "1 entry skipped" in err
    leaked = err.encode("utf-8", "surrogatepass") + stdout + b"".join(p.read_bytes() for p in written)
    assert SECRET.encode() not in leaked


@pytest.mark.parametrize("kind", ["har", "cassette-json", "record-log"])
@pytest.mark.parametrize("url", list(BAD_URLS))
def test_scan_sets_apart_a_line_with_a_malformed_url(tmp_path: Path, kind: str, url: str) -> None:
    if kind == "record-log":
        if "\ud800" in url:
            pytest.skip("orjson refuses the line itself (a bad line: invalid JSON)")
        src = tmp_path / "log.jsonl"
        src.write_text("".join(json.dumps({"url": u, "body": BODY, "time": 1.0e9 + i}) + "\n"
                               for i, u in enumerate([GOOD_URL, url, GOOD_URL])))
    else:
        src = _recording(kind, [GOOD_URL, url, GOOD_URL], tmp_path)
    rc, err, out = run_cli(main, ["scan", str(src), "--workers", "1", "--json"])
    assert rc == 0, err
    doc = json.loads(out)
    assert doc["bad_lines"]["total"] == 1
    assert "malformed URL" in json.dumps(doc["bad_lines"])
    assert SECRET.encode() not in out


def test_url_problem_and_the_redactor_never_raise_valueerror() -> None:
    from fidelity.capture.redact import MalformedURL, Redactor, url_problem

    assert url_problem(GOOD_URL) is None
    assert url_problem("http://[::1]:8080/v1") is None
    for url, reason in BAD_URLS.items():
        assert reason in (url_problem(url) or "")
        with pytest.raises(MalformedURL) as info:
            Redactor().url(url)
        assert isinstance(info.value, InputError)
        assert SECRET not in str(info.value)


# --------------------------------------------------------------------------- gzip bombs


def newline_bomb(n: int) -> bytes:
    """``n`` newlines, gzipped (about 1,000-fold: DEFLATE's ceiling)."""
    import gzip

    return gzip.compress(b"\n" * n, 9)


@pytest.mark.parametrize("name", ["log.jsonl.gz", "r.har.gz", "c.yaml.gz"])
def test_import_stops_a_gzip_bomb_at_the_size_limit(tmp_path: Path, name: str) -> None:
    src = tmp_path / name
    src.write_bytes(newline_bomb(4 << 20))
    rc, err, _ = run_cli(main, ["import", str(src), str(tmp_path / "out"), "--max-decompressed", "1M"])
    _one_line(rc, err, src, "decompresses to more than 1 MiB; --max-decompressed raises the limit")
    # raised, the same file is read (and found to hold no request)
    rc, err, _ = run_cli(main, ["import", str(src), str(tmp_path / "out"), "--max-decompressed", "8M"])
    assert "decompresses" not in err


def test_scan_takes_the_same_gzip_limit_flags_as_import(tmp_path: Path) -> None:
    src = tmp_path / "log.jsonl.gz"
    src.write_bytes(newline_bomb(4 << 20))
    rc, err, _ = run_cli(main, ["scan", str(src), "--json", "--max-decompressed", "1M"])
    _one_line(rc, err, src, "decompresses to more than 1 MiB; --max-decompressed raises the limit")
    rc, err, _ = run_cli(main, ["scan", str(src), "--json", "--max-decompressed", "8M"])
    assert "decompresses" not in err


def test_import_stops_a_gzip_bomb_at_the_ratio_limit(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from fidelity import gzipped

    monkeypatch.setattr(gzipped, "RATIO_FLOOR", 1 << 20)  # judged sooner, so the test stays small
    src = tmp_path / "log.jsonl.gz"
    src.write_bytes(newline_bomb(4 << 20))
    rc, err, _ = run_cli(main, ["import", str(src), str(tmp_path / "out")])
    _one_line(rc, err, src, "expands more than 1,000-fold")
    assert "--max-gzip-ratio" in err
    rc, err, _ = run_cli(main, ["import", str(src), str(tmp_path / "out"), "--max-gzip-ratio", "5000"])
    assert "fold" not in err


def test_scan_stops_a_gzip_bomb_and_leaves_no_temporary_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import tempfile

    from fidelity import gzipped

    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path / "tmp"))
    (tmp_path / "tmp").mkdir()
    src = tmp_path / "log.jsonl.gz"
    src.write_bytes(newline_bomb(4 << 20))
    monkeypatch.setattr(gzipped, "MAX_DECOMPRESSED", 1 << 20)
    rc, err, _ = run_cli(main, ["scan", str(src), "--workers", "1"])
    _one_line(rc, err, src, "decompresses to more than 1 MiB")
    assert list((tmp_path / "tmp").iterdir()) == []


_members = st.lists(st.binary(max_size=3000), min_size=1, max_size=4)


@given(_members, st.integers(1, 70_000))
@settings(deadline=None)
def test_gunzip_reads_concatenated_members_in_any_read_size(members: list[bytes], read_size: int) -> None:
    import gzip
    import io

    from fidelity.gzipped import iter_gunzip

    data = b"".join(gzip.compress(m) for m in members)
    src = io.BytesIO(data)
    assert b"".join(iter_gunzip(lambda _n: src.read(read_size), "x.gz")) == b"".join(members)


@given(st.binary(min_size=1, max_size=2000), st.data())
@settings(deadline=None)
def test_a_cut_gzip_file_is_truncated_not_a_crash(payload: bytes, data: st.DataObject) -> None:
    import gzip

    from fidelity.gzipped import gunzip

    whole = gzip.compress(payload)
    cut = data.draw(st.integers(0, len(whole) - 9))  # the 8-byte trailer at least is missing
    with pytest.raises(InputError) as info:
        gunzip(whole[:cut], "x.gz")
    assert str(info.value).startswith("x.gz: ")


def test_parse_size() -> None:
    from fidelity.gzipped import parse_size

    assert [parse_size(t) for t in ("1000", "512M", "4G", "1.5k", "2GiB", "3mb")] == [
        1000, 512 << 20, 4 << 30, 1536, 2 << 30, 3 << 20]
    for bad in ("", "x", "-1G", "0", "inf", "1Q"):
        with pytest.raises(ValueError):
            parse_size(bad)


# --------------------------------------------------------------------------- Ctrl-C during a scan

_BLOCKING_SCAN = """
import os, sys, time
from fidelity.scan import partition
import fidelity.scan as scan_pkg
from fidelity.cli import main

def blocking_replay(task):
    # a worker that is busy for as long as the test needs: it says so, then works on
    open(os.path.join(sys.argv[1], f"busy-{os.getpid()}"), "w").close()
    while True:
        time.sleep(0.05)

partition.replay_batch = scan_pkg.replay_batch = blocking_replay
sys.exit(main(["scan", *sys.argv[2:]]))
"""


def test_ctrl_c_ends_a_scan_with_exit_130_and_removes_its_temporary_files(tmp_path: Path) -> None:
    """SIGINT to the scan's whole process group (what Ctrl-C in a terminal
    does) while both workers are busy: the scan ends within seconds, with
    exit code 130, one line on stderr, no worker left and no
    ``fidelity-scan-*`` folder left. Before the fix the workers printed
    KeyboardInterrupt tracebacks and the parent waited for them forever."""
    import os
    import signal
    import subprocess
    import sys
    import time

    log = tmp_path / "log.jsonl"
    with open(log, "w") as fh:
        for i in range(40):  # two partitions (two system prompts), so both workers get a task
            body = {"model": "gpt-4o", "messages": [{"role": "system", "content": f"prompt {i % 2}"},
                                                    {"role": "user", "content": f"question {i}"}]}
            fh.write(json.dumps({"time": 1.7e9 + i, "url": GOOD_URL, "session": f"s{i % 2}", "body": body}) + "\n")
    busy = tmp_path / "busy"
    busy.mkdir()
    tmp = tmp_path / "tmp"
    tmp.mkdir()
    env = dict(os.environ, TMPDIR=str(tmp), PYTHONPATH=str(Path(__file__).resolve().parents[2]))
    proc = subprocess.Popen([sys.executable, "-c", _BLOCKING_SCAN, str(busy), str(log), "--workers", "2"],
                            env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, start_new_session=True)
    try:
        deadline = time.monotonic() + 120
        while len(list(busy.iterdir())) < 2 and proc.poll() is None and time.monotonic() < deadline:
            time.sleep(0.05)
        assert len(list(busy.iterdir())) == 2, proc.communicate(timeout=5)
        assert [p.name for p in tmp.iterdir() if p.name.startswith("fidelity-scan-")]  # the scan's folder exists
        os.killpg(proc.pid, signal.SIGINT)
        try:
            _, err = proc.communicate(timeout=30)
        except subprocess.TimeoutExpired:
            pytest.fail("the scan did not end within 30 s of Ctrl-C")
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.communicate()
    assert proc.returncode == 130, err
    assert err.decode().strip() == "fidelity: interrupted", err
    assert list(tmp.iterdir()) == []
    for name in busy.iterdir():  # every worker is gone
        pid = int(name.name.split("-")[1])
        with pytest.raises(ProcessLookupError):
            os.kill(pid, 0)


# --------------------------------------------------------------------------- exact integers in DSH tool calls

_args = st.recursive(huge_integers | st.integers() | st.text(max_size=5) | st.floats(allow_nan=False, allow_infinity=False),
                     lambda kids: st.lists(kids, max_size=3) | st.dictionaries(st.text(max_size=3), kids, max_size=3),
                     max_leaves=8)


@given(st.dictionaries(st.text(max_size=5), _args, max_size=4))
def test_dsh_tool_arguments_keep_every_integer_exact(args: dict[str, object]) -> None:
    from fidelity.sources.dsh._messages import tool_arguments

    got = tool_arguments(json.dumps(args))
    assert got == args
    assert json.dumps(got) == json.dumps(args)  # same types: an int never comes back as a float


def test_a_dsh_session_keeps_an_integer_beyond_64_bits(tmp_path: Path) -> None:
    """The case ``HYPOTHESIS_PROFILE=explore --hypothesis-seed=1834162459``
    found in tests/sources/test_sources_dsh.py."""
    from fidelity.model import ToolCall
    from fidelity.sources.dsh import read_session, step_messages

    raw = '{"": -9223372036854775809, "big": 18446744073709551616, "ok": 7}'
    rows = [{"type": "session", "id": "s"},
            {"type": "turn/start", "data": {"turn": 1}}, {"type": "step/start", "data": {"turn": 1, "step": 1}},
            {"type": "user/message", "data": {"content": [{"type": "text", "text": "go"}]}, "surfaceOp": "append"},
            {"type": "assistant/message", "data": {"turn": 1, "step": 1, "message": {"role": "assistant", "content": [
                {"type": "text", "text": ""}, {"type": "tool-call", "id": "c1", "name": "f", "arguments": raw}]}},
             "surfaceOp": "append"},
            {"type": "tool/result", "data": {"turn": 1, "step": 1, "message": {"content": [
                {"type": "tool-result", "toolCallId": "c1", "content": [{"type": "text", "text": "r"}],
                 "isError": False}]}}, "surfaceOp": "append"},
            {"type": "step/end", "data": {"turn": 1, "step": 1}},
            {"type": "step/start", "data": {"turn": 1, "step": 2}}]
    path = tmp_path / "session.jsonl"
    path.write_text("\n".join(json.dumps(r) for r in rows) + "\n")
    session = read_session(path)
    calls = [p for m in step_messages(session, 1, 2) for p in m.parts if isinstance(p, ToolCall)]
    assert dict(calls[0].arguments) == {"": -9223372036854775809, "big": 18446744073709551616, "ok": 7}
    assert calls[0].arguments_json == raw


def test_a_header_with_a_lone_surrogate_sets_its_entry_apart(tmp_path: Path) -> None:
    entries = [{"request": {"method": "POST", "url": GOOD_URL, "headers": [{"name": "x-h", "value": v}],
                            "postData": {"mimeType": "application/json", "text": json.dumps(BODY)}}}
               for v in ("ok", "a\ud800")]
    src = tmp_path / "r.har"
    src.write_text(json.dumps({"log": {"version": "1.2", "entries": entries}}))
    rc, err, _ = run_cli(main, ["import", str(src), str(tmp_path / "out")])
    assert rc == 0, err
    assert "warning: /log/entries/1: set apart: the method or a header holds a lone surrogate" in err
    assert len(list((tmp_path / "out").iterdir())) == 1


def test_a_recording_whose_file_name_is_not_utf8_imports(tmp_path: Path) -> None:
    """Python keeps a file name's undecodable bytes as lone surrogates; every
    snapshot names its source file, so the name is escaped, not a crash."""
    import os

    src = Path(os.fsdecode(bytes(tmp_path) + b"/r\xff.har"))
    src.write_text(json.dumps({"log": {"version": "1.2", "entries": [
        {"request": {"method": "POST", "url": GOOD_URL, "headers": [],
                     "postData": {"mimeType": "application/json", "text": json.dumps(BODY)}}}]}}))
    rc, err, _ = run_cli(main, ["import", str(src), str(tmp_path / "out")])
    assert rc == 0, err
    (snap,) = (tmp_path / "out").iterdir()
    assert b'"source":"har:r\\\\xff.har#/log/entries/0"' in snap.read_bytes()


@pytest.mark.parametrize("wbits", [15, -15])
def test_gunzip_reads_zlib_and_raw_deflate_within_the_limits(wbits: int) -> None:
    import zlib

    from fidelity import gzipped

    c = zlib.compressobj(9, zlib.DEFLATED, wbits)
    data = c.compress(b"\n" * (2 << 20)) + c.flush()
    assert gzipped.gunzip(data, "body", wbits=wbits) == b"\n" * (2 << 20)
    with gzipped.limits(size=1 << 20), pytest.raises(InputError) as info:
        gzipped.gunzip(data, "body", wbits=wbits)
    assert "more than 1 MiB" in str(info.value)
