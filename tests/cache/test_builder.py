"""The one builder (:class:`fidelity.cache.builder.PromptIds`): a request
built from earlier ones (the scan's order: one builder per partition, each
view extended from the previous one) is the request a fresh builder makes
from the body alone, and the one ``cache_prompt`` makes from the body's
bytes, on drawn sessions in each dialect with an element handler, on the
generated logs and on recorded traffic. Reuse must never change a figure."""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import orjson
import pytest
from hypothesis import given
from hypothesis import strategies as st

from fidelity import replay as R
from fidelity import wire
from fidelity.cache import common_prefix
from fidelity.cache.builder import PromptIds, element_handler
from fidelity.cache.memo import TokenMemo
from fidelity.cache.prompts import cache_prompt
from fidelity.model import Route
from fidelity.providers import placed_url
from fidelity.scan import scan, synthetic
from fidelity.scan.partition import view_after_rec, view_of
from fidelity.scan.records import parse_record
from fidelity.scan.splice import parse_after
from fidelity.strategies import requests

#: (dialect, provider, model) of each dialect built element by element
ELEMENTS = [("openai-chat", "openai", "gpt-4.1"), ("openai-chat", "openai", "gpt-5-mini"),
            ("openai-responses", "openai", "gpt-5"), ("anthropic-messages", "anthropic", "claude-sonnet-4-5"),
            ("deepseek", "deepseek", "deepseek-v4-flash")]


def check(lines: Sequence[bytes], memo: TokenMemo | None = None) -> tuple[int, int]:
    """Feed ``lines`` (one partition's requests, in order) through one
    builder per model, as the scan does; each request's (cache model,
    SimRequest) must equal a fresh builder's on the same record and
    ``cache_prompt``'s on the same body bytes. Returns (requests, built
    element by element)."""
    memo = TokenMemo() if memo is None else memo
    builders: dict[str, tuple[PromptIds, list[Any]]] = {}
    parsed = None
    by_elements = 0
    for i, line in enumerate(lines):
        # as the scan's replay reads a line: parsed after the previous one,
        # its view extended from the previous view of its builder
        parsed = parse_after(line, parsed)
        rec = parsed.rec
        b, prev = builders.setdefault(rec.model, (PromptIds(memo), [None]))
        view, k = view_after_rec(rec, prev[0])
        prev[0] = view
        endpoint = placed_url(rec.url)
        built = b.build(rec, view, k, float(i), i, endpoint)
        by_elements += element_handler(rec.dialect, rec.provider) is not None
        assert built == PromptIds(TokenMemo()).build(rec, None, None, float(i), i, endpoint), (i, rec.dialect.name)
        body = rec.raw_body if rec.raw_body is not None else orjson.dumps(rec.body)
        want = cache_prompt(body, dialect=rec.dialect.name, model=rec.model, time=float(i), label=i,
                            endpoint=endpoint, provider=rec.provider)
        assert built == (want.cache_model, want.request, want.levels, want.segment_ids), (i, rec.dialect.name)
    return len(lines), by_elements


def _line(dialect: str, body: bytes) -> bytes:
    return orjson.dumps({"provider": dialect, "body": orjson.loads(body)})


@st.composite
def sessions(draw: st.DrawFn) -> tuple[str, list[bytes]]:
    """A session in one dialect: a drawn request's history re-sent turn by
    turn (each request the previous one plus a message), then a drawn
    change (a tool or the system prompt dropped, a message edited) and the
    history again."""
    dialect, provider, model = draw(st.sampled_from(ELEMENTS))
    req = draw(requests(route=st.just(Route(provider, model))))
    d = wire.get(dialect)
    seq = [dataclasses.replace(req, messages=req.messages[:k]) for k in range(1, len(req.messages) + 1)]
    change = draw(st.sampled_from(["none", "tool", "system", "edit"]))
    if change == "tool" and req.tools:
        seq.append(dataclasses.replace(req, tools=req.tools[1:]))
    elif change == "system" and req.system:
        seq.append(dataclasses.replace(req, system=req.system[1:]))
    elif change == "edit" and len(req.messages) > 1:
        seq.append(dataclasses.replace(req, messages=req.messages[1:]))
    seq.append(req)
    lines = []
    for r in seq:
        try:
            lines.append(_line(dialect, d.render(r)))
        except Exception:  # noqa: BLE001 -- a request this dialect cannot render: not a session here
            continue
    return dialect, lines


@given(sessions())
def test_reuse_changes_no_request_on_drawn_sessions(session: tuple[str, list[bytes]]) -> None:
    """200 drawn sessions (ci profile), each request checked."""
    dialect, lines = session
    n, elements = check(lines)
    assert elements == n  # each built element by element


def test_reuse_changes_no_request_on_the_generated_logs() -> None:
    for append_only in (False, True):
        by_session: dict[str, list[bytes]] = {}
        for line in synthetic.generate(1_000_000, seed=3, append_only=append_only):
            by_session.setdefault(orjson.loads(line).get("session") or "", []).append(line.rstrip(b"\n"))
        memo = TokenMemo()
        total = built = elements = 0
        for seq in by_session.values():
            n, f = check(seq, memo)
            total, built = total + n, built + f
            elements += sum(len(view_of(parse_record(line)).items) for line in seq)
        assert total > 40 and built == total
        # repeated history is reused or found, not tokenized again
        assert memo.misses * 4 < elements, (memo.misses, elements)


def _recorded(root: Path) -> list[list[bytes]]:
    """Each recording's requests as log lines: the body as a JSON object
    and as the recorded text (exact bytes, whitespace kept)."""
    out: list[list[bytes]] = []
    for rec in R.read_recordings(root):
        as_obj, as_text = [], []
        for ex in rec:
            if ex.skip or ex.dialect is None:
                continue
            try:
                obj = orjson.loads(ex.body)
                line = orjson.dumps({"url": ex.url, "body": obj} if ex.url else {"provider": ex.dialect, "body": obj})
                parse_record(line)
                text = ex.body.decode("utf-8", "surrogatepass")
                as_text.append(orjson.dumps({"url": ex.url, "body": text} if ex.url else
                                            {"provider": ex.dialect, "body": text}))
            except Exception:  # noqa: BLE001 -- not a body the scan reads (counted as a bad line there)
                continue
            as_obj.append(line)
        out += [s for s in (as_obj, as_text) if s]
    return out


def test_reuse_changes_no_request_on_recorded_traffic(shared_real: Path) -> None:
    total = built = 0
    for sub in ("recorded-usage", "cassettes"):
        for seq in _recorded(shared_real / sub):
            n, f = check(seq)
            total, built = total + n, built + f
    assert total >= 300
    assert built >= total // 2  # the rest: dialects and gateways built from the whole view


def _tools(order: str, style: str) -> list[Any]:
    props = {"a": {"type": "string"}, "b": {"type": "integer"}}
    if order == "ba":
        props = {"b": props["b"], "a": props["a"]}
    schema = {"type": "object", "properties": props}
    if style == "anthropic":
        return [{"name": "f", "description": "d", "input_schema": schema}]
    return [{"type": "function", "function": {"name": "f", "parameters": schema}}]


@pytest.mark.parametrize("dialect,model", [("anthropic-messages", "claude-sonnet-4-5"), ("openai-chat", "gpt-4.1"),
                                           ("deepseek", "deepseek-v4-flash")])
def test_python_equal_json_that_differs_is_a_change(dialect: str, model: str) -> None:
    """Reordered keys in a tool schema, and 1 against 1.0 or true: equal in
    Python, other bytes on the wire. The builder must not reuse the earlier
    element (it did once: a reviewer's case gave 2,508 cache reads a fresh
    build does not give)."""
    style = "anthropic" if dialect == "anthropic-messages" else "openai"
    msgs = [{"role": "user", "content": "hello there " * 40}]
    bodies = [{"model": model, "max_tokens": 10, "tools": _tools("ab", style), "messages": msgs},
              {"model": model, "max_tokens": 10, "tools": _tools("ba", style), "messages": msgs},
              {"model": model, "max_tokens": 10, "tools": _tools("ba", style),
               "messages": [{**msgs[0], "n": 1}, {"role": "user", "content": "more"}]},
              {"model": model, "max_tokens": 10, "tools": _tools("ba", style),
               "messages": [{**msgs[0], "n": 1.0}, {"role": "user", "content": "more"}]},
              {"model": model, "max_tokens": 10, "tools": _tools("ba", style),
               "messages": [{**msgs[0], "n": True}, {"role": "user", "content": "more"}]}]
    lines = [_line(dialect, orjson.dumps(b)) for b in bodies]
    n, built = check(lines)
    assert n == built == len(bodies)


def test_reordered_tool_keys_break_the_cache_in_the_scan(tmp_path: Path) -> None:
    # the reordered tool is the second: the first segment, and so the
    # partition, stays the same
    first = {"name": "g", "description": "another tool", "input_schema": {"type": "object"}}
    tools = {"ab": [first, *_tools("ab", "anthropic")], "ba": [first, *_tools("ba", "anthropic")]}
    system = [{"type": "text", "text": "You are careful. " * 200, "cache_control": {"type": "ephemeral"}}]
    log = tmp_path / "ko.jsonl"
    log.write_bytes(b"".join(orjson.dumps({"url": "https://api.anthropic.com/v1/messages", "time": 1000 + i,
                                           "session": "s", "body": {"model": "claude-sonnet-4-5", "max_tokens": 10,
                                                                    "tools": tools[o], "system": system,
                                                                    "messages": [{"role": "user", "content": "hi"}]}})
                             + b"\n" for i, o in enumerate(["ab", "ba"])))
    got = scan([log], workers=1)
    # the tools come first: only the first tool survives, far below Anthropic's 1,024-token minimum
    assert got["totals"]["read_tokens"] == 0
    assert got["totals"]["breaks"] == 1


_TEXT = st.text(st.characters(codec="utf-8", exclude_categories=("Cs",)), min_size=1, max_size=40)


@given(tools=st.lists(_TEXT, max_size=3), system=st.lists(_TEXT, max_size=2), first=_TEXT, other=_TEXT,
       choice=st.sampled_from([None, {"type": "any"}]))
def test_anthropic_levels_are_where_the_prompts_stop_agreeing(tools: list[str], system: list[str], first: str,
                                                             other: str, choice: Any) -> None:
    """The builder's level starts (what ``diff`` measures lost tokens
    from) sit in order inside the prompt, and two bodies that differ only
    in their messages share at least the tokens ahead of the messages
    level; only in their system prompt, at least those ahead of the system
    level."""
    def body(sys_texts: list[str], text: str) -> bytes:
        obj: dict[str, Any] = {"model": "claude-sonnet-4-5", "max_tokens": 8,
                               "tools": [{"name": f"t{i}", "description": t, "input_schema": {"type": "object"}}
                                         for i, t in enumerate(tools)],
                               "messages": [{"role": "user", "content": text}]}
        if sys_texts:
            obj["system"] = [{"type": "text", "text": t} for t in sys_texts]
        if choice is not None and tools:
            obj["tool_choice"] = choice
        return orjson.dumps(obj)

    def built(b: bytes) -> Any:
        return PromptIds(TokenMemo()).build(_Rec(orjson.loads(b)), None, None, 0.0, 0)

    a = built(body(system, first))
    tools_at, system_at, messages_at = a.levels
    assert 0 < tools_at <= system_at <= messages_at < len(a.request.tokens)  # the request's fixed run leads
    assert (system_at > tools_at) == bool(tools) and (messages_at > system_at) == bool(system)
    shared = common_prefix(a.request.tokens, built(body(system, first + other)).request.tokens)
    assert shared >= messages_at
    changed = [s + other for s in system] or [other]
    assert common_prefix(a.request.tokens, built(body(changed, first)).request.tokens) >= system_at


@dataclasses.dataclass
class _Rec:
    body: Any
    dialect: Any = wire.get("anthropic-messages")
    provider: str = "anthropic"
    model: str = "claude-sonnet-4-5"
    raw_body: bytes | None = None


def test_a_body_the_element_builder_cannot_read_is_a_one_line_input_error() -> None:
    """No second builder to fall back to: the dialect's cache view names the
    problem, with the file; a shape the view tolerates the handlers do too
    (a DeepSeek ``messages`` object, a Responses ``tools`` string)."""
    from fidelity.errors import InputError

    with pytest.raises(InputError) as err:
        cache_prompt(b"[1,2]", dialect="openai-chat", model="gpt-4o", path="x.json")
    assert str(err.value).startswith("x.json") and "\n" not in str(err.value)
    for body, dialect in [(b'{"model":"deepseek-v4-flash","messages":{}}', "deepseek"),
                          (b'{"model":"gpt-5","input":"hi","tools":"x"}', "openai-responses")]:
        assert len(cache_prompt(body, dialect=dialect).request.tokens) >= 0
