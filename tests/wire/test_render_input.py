"""``fidelity render`` says what it reads (a canonical request, with an
example that exists), refuses a provider wire body in one line naming the
dialect it looks like, and takes the dialect from the request's route when
the route's provider speaks only one."""

from __future__ import annotations

import contextlib
import io
import json
from pathlib import Path

import pytest
from conftest import REPO

from fidelity import wire
from fidelity.canonical import load_request, request_to_json
from fidelity.cli import build_parser, main
from fidelity.commands import render

EXAMPLE = REPO / render.EXAMPLE


def _cli(argv: list[str]) -> tuple[int, bytes, str]:
    raw, err = io.BytesIO(), io.StringIO()
    out = io.TextIOWrapper(raw, encoding="utf-8")
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        rc = main(argv)
    out.flush()
    return rc, raw.getvalue(), err.getvalue()


def test_help_names_the_format_and_an_example_that_renders(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        build_parser("render").parse_args(["render", "--help"])
    text = " ".join(capsys.readouterr().out.split())
    assert '"fidelity": "request/1"' in text and render.EXAMPLE in text and "wire body" in text
    assert EXAMPLE.is_file() and load_request(EXAMPLE).route.model


@pytest.mark.parametrize("provider", wire.names())
def test_a_wire_body_is_refused_naming_the_dialect_it_looks_like(tmp_path: Path, provider: str) -> None:
    body = wire.get(provider).render(load_request(EXAMPLE))
    path = tmp_path / "body.json"
    path.write_bytes(body)
    looks_like = wire.detect(json.loads(body)).name
    for argv in (["render", str(path)], ["render", "--provider", provider, str(path)]):
        rc, out, err = _cli(argv)
        assert rc == 2 and out == b"" and err.count("\n") == 1
        assert f"{path}: this is a provider wire body (it looks like {looks_like}), not a canonical request" in err
        assert f"example: {render.EXAMPLE}" in err and f"fidelity fork --provider {looks_like}" in err
    assert path.read_bytes() == body


@pytest.mark.parametrize("route,dialect", [("deepseek", "deepseek"), ("anthropic", "anthropic-messages"),
                                           ("gemini", "gemini"), ("vllm", "vllm"), ("dashscope", "dashscope")])
def test_the_route_provider_chooses_the_dialect(tmp_path: Path, route: str, dialect: str) -> None:
    doc = json.loads(EXAMPLE.read_bytes())
    doc["route"]["provider"] = route
    path = tmp_path / "req.json"
    path.write_text(json.dumps(doc))
    rc, out, err = _cli(["render", str(path)])
    assert rc == 0 and err == ""
    assert out == wire.get(dialect).render(load_request(path))


@pytest.mark.parametrize("route,why", [("openai", "route.provider 'openai' speaks openai-chat and openai-responses"),
                                       ("acme", "route.provider 'acme' names no known provider")])
def test_a_route_with_no_single_dialect_says_why(tmp_path: Path, route: str, why: str) -> None:
    doc = json.loads(EXAMPLE.read_bytes())
    doc["route"]["provider"] = route
    path = tmp_path / "req.json"
    path.write_text(json.dumps(doc))
    rc, out, err = _cli(["render", str(path)])
    assert rc == 2 and out == b"" and err.count("\n") == 1
    assert f"{path} at /route/provider: cannot tell which dialect to render: {why}; pass --provider" in err
    rc, out, _ = _cli(["render", "--provider", "openai-responses", str(path)])
    assert rc == 0 and out == wire.get("openai-responses").render(load_request(path))


def test_a_canonical_request_round_trips_through_its_own_writer(tmp_path: Path) -> None:
    """What render reads is what fidelity.canonical writes."""
    path = tmp_path / "req.json"
    path.write_bytes(request_to_json(load_request(EXAMPLE)))
    rc, out, _ = _cli(["render", "--provider", "deepseek", str(path)])
    assert rc == 0 and out == wire.get("deepseek").render(load_request(EXAMPLE))
