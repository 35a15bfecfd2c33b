"""Fuzzing every entry point with generated and mutated inputs.

Mutations of valid bodies (bytes flipped, truncated, spliced from two valid
bodies, random bytes) go through the CLI (``diff``, ``render``, ``gate``,
``import``) in-process and through every reader. The properties: no
exception escapes (only :class:`FidelityError` from readers), exit codes are
0 or 2, a bad input gives exactly one stderr line, and a mutation that leaves
the bytes unchanged gives the same answer as before. Case counts: the ``ci``
profile runs 200 examples per property; these fuzz tests ask for 1,500 each (see ``docs/hostile-input.md``).
"""

from __future__ import annotations

import contextlib
import io
import json
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from fidelity import gate, jsonio, pricing, sources, wire
from fidelity.canonical import load_request, request_to_json
from fidelity.capture import snapshot
from fidelity.capture.importers import import_file
from fidelity.cli import main
from fidelity.errors import FidelityError

PARENT = (b'{"model":"gpt-4o","messages":[{"role":"system","content":"You are terse."},'
          b'{"role":"user","content":"List files"},{"role":"assistant","content":null,"tool_calls":'
          b'[{"id":"c1","type":"function","function":{"name":"ls","arguments":"{\\"path\\":\\".\\"}"}}]},'
          b'{"role":"tool","tool_call_id":"c1","content":"a.txt"}],"tools":[{"type":"function","function":'
          b'{"name":"ls","parameters":{"type":"object","properties":{"path":{"type":"string"}}}}}]}')
CHILD = PARENT.replace(b'"content":"a.txt"}]', b'"content":"a.txt"},{"role":"user","content":"and?"}]')
ANTHROPIC = (b'{"max_tokens":64,"messages":[{"role":"user","content":[{"type":"text","text":"hi",'
             b'"cache_control":{"type":"ephemeral"}}]}],"model":"claude-sonnet-4-5","system":"s"}')
GEMINI = b'{"contents":[{"role":"user","parts":[{"text":"hi"}]}]}'
VALID = [PARENT, CHILD, ANTHROPIC, GEMINI]

_FUZZ = settings(max_examples=1500, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large,
                                        HealthCheck.function_scoped_fixture])


@st.composite
def mutated(draw: Any, bases: list[bytes] = VALID) -> bytes:
    """A valid body mutated: bytes flipped, truncated, spliced, or random."""
    base = draw(st.sampled_from(bases))
    how = draw(st.sampled_from(["flip", "truncate", "splice", "insert", "random", "same"]))
    if how == "same":
        return base
    if how == "random":
        return draw(st.binary(max_size=300))
    if how == "truncate":
        return base[: draw(st.integers(0, len(base)))]
    if how == "splice":
        other = draw(st.sampled_from(bases))
        return base[: draw(st.integers(0, len(base)))] + other[draw(st.integers(0, len(other))):]
    data = bytearray(base)
    for _ in range(draw(st.integers(1, 4))):
        i = draw(st.integers(0, len(data) - 1))
        if how == "flip":
            data[i] ^= 1 << draw(st.integers(0, 7))
        else:
            data[i:i] = draw(st.sampled_from([b"{", b"]", b'"', b"\\", b"\xff", b"NaN", b",", b"\x00",
                                              b'"model":"x",', b"\xef\xbb\xbf", b"\\ud800", b"1e999"]))
    return bytes(data)


def _cli(argv: list[str]) -> tuple[int, str, bytes]:
    err, raw = io.StringIO(), io.BytesIO()
    out = io.TextIOWrapper(raw, encoding="utf-8")
    with contextlib.redirect_stderr(err), contextlib.redirect_stdout(out):
        rc = main(argv)
    out.flush()
    return rc, err.getvalue(), raw.getvalue()


def _diff_json(parent: bytes, child: bytes) -> tuple[int, str, Any]:
    with tempfile.TemporaryDirectory() as d:
        p, c = Path(d, "p.json"), Path(d, "c.json")
        p.write_bytes(parent)
        c.write_bytes(child)
        rc, err, out = _cli(["diff", str(p), str(c), "--json"])
        assert p.read_bytes() == parent and c.read_bytes() == child  # inputs never modified
    if rc == 2:
        assert len(err.strip().splitlines()) == 1 and "Traceback" not in err, err
        assert str(p) in err or str(c) in err, err
    return rc, err, json.loads(out) if rc == 0 else None


BASELINE = _diff_json(PARENT, CHILD)[2]


@_FUZZ
@given(child=mutated())
def test_fuzz_diff_child(child: bytes) -> None:
    rc, _err, result = _diff_json(PARENT, child)
    assert rc in (0, 2)
    if child == CHILD:
        assert result == BASELINE  # an unmutated input gives the same answer as before


@_FUZZ
@given(parent=mutated())
def test_fuzz_diff_parent(parent: bytes) -> None:
    rc, _err, result = _diff_json(parent, CHILD)
    assert rc in (0, 2)
    if parent == PARENT:
        assert result == BASELINE


def _canonical() -> bytes:
    return request_to_json(wire.get("openai-chat").parse(PARENT))


CANONICAL = _canonical()


@_FUZZ
@given(data=st.one_of(mutated([CANONICAL]), mutated()))
def test_fuzz_render(data: bytes) -> None:
    with tempfile.TemporaryDirectory() as d:
        p = Path(d, "r.json")
        p.write_bytes(data)
        rc, err, out = _cli(["render", "--provider", "openai-chat", str(p)])
    assert rc in (0, 2)
    if rc == 2:
        assert len(err.strip().splitlines()) == 1 and str(p) in err
    if data == CANONICAL:
        assert out == PARENT  # still byte-exact


READERS: list[Callable[[Path], Any]] = [
    sources.read_session, sources.read_openai_messages, sources.read_anthropic_messages,
    sources.read_gemini_history, pricing.load, gate.load_baseline, load_request, jsonio.load, snapshot.read,
    lambda p: import_file(p, "har"), lambda p: import_file(p, "cassette"), lambda p: import_file(p, "jsonl"),
]
SNAP = snapshot.dumps(snapshot.Snapshot(body=PARENT, provider="openai-chat", model="gpt-4o"))
HAR = json.dumps({"log": {"version": "1.2", "entries": [{"request": {
    "method": "POST", "url": "https://api.openai.com/v1/chat/completions",
    "headers": [{"name": "content-type", "value": "application/json"}],
    "postData": {"mimeType": "application/json", "text": PARENT.decode()}}}]}}).encode()
CASSETTE = json.dumps({"version": 1, "interactions": [{"request": {
    "method": "POST", "uri": "https://api.openai.com/v1/chat/completions", "headers": {},
    "body": PARENT.decode()}, "response": {}}]}).encode()
SESSION = (b'{"type":"session","version":0,"id":"s-1","createdAt":0,"cwd":"/w","delegationDepth":0}\n'
           b'{"type":"turn/start","data":{"turn":1}}\n{"type":"step/start","data":{"turn":1,"step":1}}\n'
           b'{"type":"user/message","data":{"content":[{"type":"text","text":"hi"}],"source":{"kind":"user"},'
           b'"role":"user","id":"u1"},"surfaceOp":"append"}\n{"type":"step/end","data":{"turn":1,"step":1}}\n')
READER_INPUTS = [SNAP, HAR, CASSETTE, SESSION, PARENT + b"\n" + CHILD + b"\n", CANONICAL]


@_FUZZ
@given(data=mutated(READER_INPUTS), which=st.integers(0, len(READERS) - 1))
def test_fuzz_readers(data: bytes, which: int) -> None:
    with tempfile.TemporaryDirectory() as d:
        p = Path(d, "session.jsonl")
        p.write_bytes(data)
        try:
            READERS[which](p)
        except FidelityError as exc:
            assert "\n" not in str(exc) and str(p) in str(exc)
        assert p.read_bytes() == data


@_FUZZ
@given(data=mutated(READER_INPUTS), kind=st.sampled_from(["har", "cassette", "jsonl", "dsh"]))
def test_fuzz_import_cli(data: bytes, kind: str) -> None:
    with tempfile.TemporaryDirectory() as d:
        p = Path(d, "session.jsonl")
        p.write_bytes(data)
        rc, err, _ = _cli(["import", str(p), str(Path(d, "out")), "--kind", kind])
        assert rc in (0, 2)
        if rc == 2:
            assert len(err.strip().splitlines()) == 1 and str(p) in err, err
        assert p.read_bytes() == data


@_FUZZ
@given(data=mutated([b'{"schema":"fidelity.report/1","rows":[{"session":"f","variant":"v","provider":"openai-chat",'
                     b'"tokens":{"lost":3},"cost":null}]}']))
def test_fuzz_gate(data: bytes) -> None:
    with tempfile.TemporaryDirectory() as d:
        p = Path(d, "report.json")
        p.write_bytes(data)
        rc, err, _ = _cli(["gate", "--report", str(p), "--update-baseline", "--baseline", str(Path(d, "b.json")),
                           "--config", str(Path(d, "none.toml"))])
        assert rc in (0, 2)
        if rc == 2:
            assert len(err.strip().splitlines()) == 1 and str(p) in err, err
            assert not Path(d, "b.json").exists()  # nothing half-written


@_FUZZ
@given(data=mutated([PARENT, ANTHROPIC, GEMINI]), name=st.sampled_from(sorted(set(wire.names()))))
def test_fuzz_wire_dialects(data: bytes, name: str) -> None:
    d = wire.get(name)
    for fn in (d.parse, d.cache_view):
        try:
            fn(data)
        except FidelityError as exc:
            assert "\n" not in str(exc)


# --------------------------------------------------------------------------- hostile recordings (issue #33)
# Reusable strategies for what byte mutations of valid inputs never reach:
# the fresh-seed pass (tests/hostile/test_fuzz_fresh.py) and tests/hostile/test_hostile_readers.py
# draw from them.

#: integers on both sides of every 64-bit edge, and far beyond: orjson
#: rounds one past 64 bits to a float
huge_integers = st.one_of(
    st.sampled_from([2**63 - 1, 2**63, -(2**63), -(2**63) - 1, 2**64 - 1, 2**64, -(2**64), 10**30, -(10**40)]),
    st.integers(min_value=2**63 - 3, max_value=2**64 + 3),
    st.integers(min_value=-(2**64) - 3, max_value=-(2**63) + 3),
    st.integers(min_value=-(10**60), max_value=10**60),
)

_HOSTS = ["api.openai.com", "api.anthropic.com", "localhost", "[::1]", "127.0.0.1"]
#: broken hosts and ports: urlsplit's ValueErrors (bracket checks, NFKC
#: normalisation), .port's ValueErrors, and a lone surrogate
_BROKEN = ["[zz::q]", "[::1", "::1]", "[v1.x]", "[::1]x", "[", "]", "host:99999", "host:-1", "host:port",
           "host:65536", "ho\uff03st", "a\u2100b", "\ud800", "\udfff", "h\ud83dst"]


@st.composite
def malformed_urls(draw: Any) -> str:
    """A model-request URL broken where parsers trust it, e.g.
    ``http://[zz::q]/v1/chat/completions``, ``https://api.openai.com:99999/v1/messages``
    or ``\\ud800https://api.openai.com/v1/chat/completions``; sometimes
    with a ``?key=`` credential that must never be written."""
    scheme = draw(st.sampled_from(["http://", "https://", ""]))
    host = draw(st.sampled_from(_HOSTS))
    path = draw(st.sampled_from(["/v1/chat/completions", "/v1/messages", "/v1/responses", "/"]))
    broken = draw(st.sampled_from(_BROKEN))
    where = draw(st.sampled_from(["host", "port", "before", "path"]))
    if where == "host":
        host = broken.replace("host", draw(st.sampled_from(_HOSTS)))
    elif where == "port":
        host = host + ":" + draw(st.sampled_from(["99999", "-1", "x", "65536", "1" * 30, ""]))
    url = scheme + host + path
    if where == "before":
        url = broken + url
    elif where == "path":
        url = url + broken
    if draw(st.booleans()):
        url += "?key=sk-fuzzsecret0123456789"
    return url


@st.composite
def alias_heavy_yaml(draw: Any) -> bytes:
    """A vcrpy cassette whose one value is a tree of nested aliases, e.g.
    ``a1: &a1 [*a0, *a0, *a0]``: ``fanout ** levels`` values once expanded,
    from 1 (a plain alias) to billions (a bomb), placed where readers walk."""
    levels = draw(st.integers(1, 12))
    fanout = draw(st.integers(1, 12))
    lines = ["x0: &a0 [" + ", ".join(draw(st.sampled_from(["x", "1", "{k: v}", "[]"])) for _ in range(fanout)) + "]"]
    for i in range(1, levels):
        lines.append(f"x{i}: &a{i} [" + ", ".join([f"*a{i - 1}"] * fanout) + "]")
    top = f"*a{levels - 1}"
    body = json.dumps({"model": "gpt-4o", "messages": [{"role": "user", "content": "hi"}]})
    place = draw(st.sampled_from(["headers", "response", "interactions", "body", "extra"]))
    headers = f"{{X-A: {top}}}" if place == "headers" else "{}"
    rbody = top if place == "response" else "{string: '{}'}"
    rbody_or = f"'{body}'" if place != "body" else top
    interaction = ("- request: {method: POST, uri: 'https://api.openai.com/v1/chat/completions', "
                   f"headers: {headers}, body: {rbody_or}}}\n"
                   f"  response: {{status: {{code: 200}}, headers: {{}}, body: {rbody}}}\n")
    doc = "\n".join(lines) + "\nversion: 1\n"
    if place == "interactions":
        doc += f"interactions: {top}\n"
    else:
        doc += "interactions:\n" + interaction
        if place == "extra":
            doc += f"extra: {top}\n"
    return doc.encode()


@st.composite
def gzip_bombs(draw: Any) -> tuple[bytes, int]:
    """``(gzip data, decompressed size)``: one byte or line repeated (as
    much as 1,000-fold), maybe as several members, maybe cut short."""
    import gzip

    unit = draw(st.sampled_from([b"\n", b"\x00", b"{}\n", b'{"model":"gpt-4o"}\n']))
    count = draw(st.integers(1, (2 << 20) // len(unit)))
    members = draw(st.integers(1, 3))
    plain = unit * count
    data = b"".join(gzip.compress(plain, draw(st.integers(1, 9))) for _ in range(members))
    size = len(plain) * members
    if draw(st.integers(0, 4)) == 0:
        data = data[: draw(st.integers(0, len(data) - 1))]
        size = -1  # cut short: no size
    return data, size
