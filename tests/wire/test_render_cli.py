"""``fidelity render``: exact bytes on stdout, one-line errors."""

from __future__ import annotations

import argparse
import subprocess
import sys

import pytest
from conftest import REPO

from fidelity import wire
from fidelity.canonical import load_request
from fidelity.commands import render
from fidelity.errors import UnknownName

EXAMPLE = REPO / "fixtures" / "request.example.json"


def _args(*argv: str) -> argparse.Namespace:
    parser = argparse.ArgumentParser()
    render.add_arguments(parser)
    return parser.parse_args(list(argv))


@pytest.mark.parametrize("provider", ["openai-chat", "openai-responses", "deepseek", "dashscope", "vllm", "sglang"])
def test_render_writes_exact_body(provider: str, capfdbinary) -> None:
    assert render.run(_args("--provider", provider, str(EXAMPLE))) == 0
    out = capfdbinary.readouterr().out
    assert out == wire.get(provider).render(load_request(EXAMPLE))
    assert not out.endswith(b"\n")


def test_unknown_provider_lists_known_ones() -> None:
    with pytest.raises(UnknownName) as info:
        render.run(_args("--provider", "nope", str(EXAMPLE)))
    assert "openai-chat" in str(info.value) and "\n" not in str(info.value)


def test_cli_exit_codes() -> None:
    code = "import sys; from fidelity.cli import main; sys.exit(main(sys.argv[1:]))"
    from fidelity import cli

    cli.build_parser()  # a CLI that cannot import or build its parser fails here, never skips
    ok = subprocess.run([sys.executable, "-c", code, "render", "--provider", "openai-chat", str(EXAMPLE)],
                        capture_output=True, cwd=REPO)
    assert ok.returncode == 0 and ok.stdout == wire.get("openai-chat").render(load_request(EXAMPLE))
    bad = subprocess.run([sys.executable, "-c", code, "render", "--provider", "nope", str(EXAMPLE)],
                         capture_output=True, cwd=REPO, text=True)
    assert bad.returncode == 2 and bad.stderr.count("\n") == 1 and "known:" in bad.stderr
