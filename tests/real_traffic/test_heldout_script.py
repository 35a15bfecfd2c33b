"""scripts/heldout.py: the split by source repository, distinct requests, determinism;
and fidelity.tokens.for_model(..., nearest=True) for models whose vocabulary is unknown."""

from __future__ import annotations

import importlib.util
import json
import sys
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from fidelity import tokens
from fidelity.errors import UnknownName

ROOT = Path(__file__).resolve().parents[2]
CORPUS = Path("/work/corpus")


def _load():
    spec = importlib.util.spec_from_file_location("heldout_script", ROOT / "scripts" / "heldout.py")
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    sys.modules["heldout_script"] = mod
    spec.loader.exec_module(mod)
    return mod


heldout = _load()


def _cassette(path: Path, requests: list[tuple[str, str, int]]) -> None:
    """A vcrpy cassette (JSON is YAML) of OpenAI chat requests: (model, user text, billed prompt)."""
    inter = []
    for model, text, billed in requests:
        body = json.dumps({"model": model, "messages": [{"role": "user", "content": text}]})
        resp = json.dumps({"id": "x", "object": "chat.completion", "model": model,
                           "choices": [{"index": 0, "message": {"role": "assistant", "content": "ok"},
                                        "finish_reason": "stop"}],
                           "usage": {"prompt_tokens": billed, "completion_tokens": 1, "total_tokens": billed + 1,
                                     "prompt_tokens_details": {"cached_tokens": 0}}})
        inter.append({"request": {"method": "POST", "uri": "https://api.openai.com/v1/chat/completions",
                                  "body": body, "headers": {"content-type": ["application/json"]}},
                      "response": {"status": {"code": 200, "message": "OK"},
                                   "headers": {"content-type": ["application/json"]},
                                   "body": {"string": resp}}})
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps({"interactions": inter, "version": 1}))


@pytest.fixture()
def corpus(tmp_path: Path) -> Path:
    root = tmp_path / "corpus"
    same = [("gpt-4o-mini", "What is the capital of France?", 14)]
    # one test replayed in three cassettes: one distinct request
    for i in range(3):
        _cassette(root / "alpha__one" / "tests" / "cassettes" / f"t{i}.yaml", same)
    _cassette(root / "beta__two" / "cassettes" / "b.yaml",
              [("gpt-4o-mini", "Name three primes.", 11), ("gpt-4o-mini", "Name four primes.", 40)])
    return root


def test_split_puts_each_repository_in_one_set(corpus: Path) -> None:
    dirs = heldout.repo_dirs(corpus)
    assert sorted(dirs) == ["alpha/one", "beta/two"]
    fit, held = heldout.split(dirs, ["ALPHA/one"])
    assert fit == ("alpha/one",) and held == ("beta/two",)
    assert not set(fit) & set(held)


def test_identical_requests_count_once(corpus: Path) -> None:
    cols = heldout.run(corpus, ["alpha/one"], None)
    fit, held = cols["fit"], cols["held out"]
    assert (fit.requests, fit.distinct, fit.with_usage, fit.scored) == (3, 1, 1, 1)
    assert (held.requests, held.distinct, held.with_usage, held.scored) == (2, 2, 2, 2)
    n, median, p95 = fit.tokens[("openai", "text")]
    assert n == 1 and median == p95
    # the held-out pair: one of the two billed figures is far off, so p95 is the larger error
    n, median, p95 = held.tokens[("openai", "text")]
    assert n == 2 and p95 > 0.5 and median <= p95
    assert held.detected == held.generation == 2


def test_markdown_is_deterministic_and_names_the_split(corpus: Path) -> None:
    a = heldout.render(heldout.run(corpus, ["alpha/one"], None), command="c", date="2026-01-01")
    b = heldout.render(heldout.run(corpus, ["alpha/one"], None), command="c", date="2026-01-01")
    assert a == b
    assert "| figure | fit | held out |" in a
    assert "- fit: alpha/one" in a and "- held out: beta/two" in a
    assert "3 / 1" in a  # requests / distinct of the fit set


def test_main_writes_the_file_and_refuses_a_missing_corpus(corpus: Path, tmp_path: Path, capsys) -> None:
    out = tmp_path / "out" / "heldout.md"
    assert heldout.main([str(corpus), "--split", "fit=beta/two", "--no-real", "--out", str(out),
                         "--date", "2026-01-01"]) == 0
    assert "- fit: beta/two" in out.read_text()
    assert heldout.main([str(tmp_path / "nowhere"), "--no-real"]) == 2
    err = capsys.readouterr().err
    assert "nowhere" in err and "Traceback" not in err and len(err.strip().splitlines()) == 1


@pytest.mark.skipif(not CORPUS.is_dir(), reason="the development corpus (/work/corpus) is not on this machine")
def test_development_corpus_figures() -> None:
    dirs = heldout.repo_dirs(CORPUS)
    fit, held = heldout.split(dirs, heldout.FIT)
    assert fit and held and not set(fit) & set(held)
    fig = heldout.measure({n: dirs[n] for n in held})
    assert fig.unreadable <= fig.files
    assert fig.distinct <= fig.requests and fig.with_usage <= fig.generation
    assert fig.detected <= fig.generation and fig.scored <= fig.with_usage


# -- for_model(..., nearest=True): modelled on real gateway bodies (OpenRouter's z-ai/glm-4.6,
#    Groq's llama-3.3-70b-versatile, Bedrock's us.anthropic.claude-opus-4-8 in pydantic-ai's cassettes)


def test_unknown_model_stays_an_error_without_nearest() -> None:
    with pytest.raises(UnknownName):
        tokens.for_model("z-ai/glm-4.6")


def test_unknown_model_gets_the_nearest_tokenizer_marked_estimated() -> None:
    tok = tokens.for_model("z-ai/glm-4.6", nearest=True)
    assert tok.estimated and tok.name == "o200k_base~nearest"
    text = "Summarise the previous conversation in one line."
    assert tok.encode(text) == tokens.get("o200k_base").encode(text)
    assert tok.count(text) == tokens.get("o200k_base").count(text)
    assert tokens.for_model("llama-3.3-70b-versatile", "openai", nearest=True) is tok


def test_a_family_after_a_region_prefix_is_found() -> None:
    assert tokens.for_model("us.anthropic.claude-opus-4-8", nearest=True).name == "claude-estimate"
    assert tokens.for_model("anthropic.claude-3-5-sonnet-20240620-v1:0", nearest=True).name == "claude-estimate"


def test_provider_fallback_unchanged_without_nearest() -> None:
    tok = tokens.for_model("mistral-large-latest", "openai")
    assert tok.name == "o200k_base" and not tok.estimated
    assert tokens.for_model("mistral-large-latest", "openai", nearest=True).estimated


@settings(deadline=None)
@given(st.text(min_size=1, max_size=40), st.sampled_from([None, "openai", "anthropic", "gemini", "deepseek"]))
def test_nearest_never_raises_and_agrees_where_the_name_resolves(model: str, provider: str | None) -> None:
    near = tokens.for_model(model, provider, nearest=True)
    try:
        strict = tokens.for_model(model, provider)
    except UnknownName:
        assert near.estimated
        return
    assert near is strict or (near.estimated and near.encode("abc def") == strict.encode("abc def"))


# -- distinct requests: properties


@settings(deadline=None)
@given(st.lists(st.lists(st.sampled_from([b"a", b"b", b"c", b"d"]), max_size=5), max_size=6))
def test_distinct_keeps_each_request_once_in_reading_order(bodies: list[list[bytes]]) -> None:
    from fidelity.traffic.exchange import Exchange

    recs = [[Exchange(f"f{i}", k, b, url="https://api.openai.com/v1/chat/completions") for k, b in enumerate(rec)]
            for i, rec in enumerate(bodies)]
    uniq = heldout.distinct(recs)
    flat = [b for rec in bodies for b in rec]
    assert [ex.body for ex in uniq] == list(dict.fromkeys(flat))
    assert heldout.distinct([uniq]) == uniq
    kept = heldout.distinct_recordings(recs)
    assert len({tuple(ex.body for ex in r) for r in kept}) == len(kept)
    assert {tuple(r) for r in bodies} == {tuple(ex.body for ex in r) for r in kept}


# -- scripts/corpus_build.py on a small repository made here


def _load_build():
    spec = importlib.util.spec_from_file_location("corpus_build_script", ROOT / "scripts" / "corpus_build.py")
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def _git_repo(path: Path, files: dict[str, bytes]) -> Path:
    import subprocess

    for name, data in files.items():
        (path / name).parent.mkdir(parents=True, exist_ok=True)
        (path / name).write_bytes(data)
    env = {"GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@t", "GIT_COMMITTER_NAME": "t",
           "GIT_COMMITTER_EMAIL": "t@t", "HOME": str(path), "PATH": "/usr/bin:/bin:/usr/local/bin"}
    for cmd in (["init", "-q"], ["add", "-A"], ["commit", "-qm", "x"]):
        subprocess.run(["git", "-C", str(path), *cmd], check=True, env=env)
    return path / ".git"


def test_corpus_build_takes_recordings_and_licence_only(tmp_path: Path) -> None:
    import gzip

    build = _load_build()
    cassette = b"interactions:\n- request:\n    uri: https://api.anthropic.com/v1/messages\n"
    git_dir = _git_repo(tmp_path / "src", {
        "LICENSE": b"MIT",
        "tests/cassettes/a.yaml": cassette,
        "tests/cassettes/b.yaml.gz": gzip.compress(cassette),
        "tests/cassettes/other.yaml": b"interactions: []  # https://example.com\n",
        "tests/fixtures/c.yaml": cassette,  # not a recordings folder
    })
    out = tmp_path / "corpus"
    m = build.extract(git_dir, out, name="someone/tool")
    assert m["files"] == ["tests/cassettes/a.yaml", "tests/cassettes/b.yaml.gz"]
    assert m["licence_files"] == ["LICENSE"]
    assert (out / "someone__tool" / "tests/cassettes/a.yaml").read_bytes() == cassette
    assert (out / "someone__tool" / "LICENSE").read_bytes() == b"MIT"
    assert json.loads((out / "someone__tool" / "MANIFEST.json").read_text())["commit"] == m["commit"]
    with pytest.raises(SystemExit):
        build.extract(git_dir, out, name="someone/ruby_llm")  # kept back to measure the result


def test_corpus_build_reads_each_revision_given_and_go_vcr_testdata(tmp_path: Path) -> None:
    import subprocess

    build = _load_build()
    go_vcr = b"---\nversion: 2\ninteractions:\n- request:\n    url: https://api.z.ai/api/paas/v4/chat/completions\n"
    git_dir = _git_repo(tmp_path / "src", {"LICENSE.md": b"FSL", "internal/agent/testdata/a/old.yaml": go_vcr,
                                           "internal/agent/testdata/a/both.yaml": go_vcr})
    env = {"GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@t", "GIT_COMMITTER_NAME": "t",
           "GIT_COMMITTER_EMAIL": "t@t", "HOME": str(tmp_path), "PATH": "/usr/bin:/bin:/usr/local/bin"}
    src = tmp_path / "src"
    (src / "internal/agent/testdata/a/old.yaml").unlink()
    (src / "internal/agent/testdata/a/both.yaml").write_bytes(go_vcr + b"# newer\n")
    subprocess.run(["git", "-C", str(src), "commit", "-qam", "y"], check=True, env=env)
    out = tmp_path / "corpus"
    m = build.extract(git_dir, out, name="someone/agent", revs=("HEAD", "HEAD~1"))
    assert m["files"] == ["internal/agent/testdata/a/both.yaml", "internal/agent/testdata/a/old.yaml"]
    assert (out / "someone__agent/internal/agent/testdata/a/both.yaml").read_bytes().endswith(b"# newer\n")
    head, older = m["commit"], [c for c in m["files_from"] if c != m["commit"]][0]  # type: ignore[union-attr]
    assert m["files_from"] == {head: ["internal/agent/testdata/a/both.yaml"],
                               older: ["internal/agent/testdata/a/old.yaml"]}
    assert m["licence_files"] == ["LICENSE.md"]


def test_registering_again_replaces_the_nearest_stand_in(monkeypatch: pytest.MonkeyPatch) -> None:
    from fidelity.tokens import EstimateTokenizer

    monkeypatch.setattr(tokens, "NEAREST_DEFAULT", "t-heldout-base")
    try:
        # a real (not estimated) base, so the stand-in wraps it
        tokens.register("t-heldout-base", lambda: _plain("one"))
        first = tokens.for_model("no-such-family-7", nearest=True)
        assert first.estimated and first.base.source == "one"
        tokens.register("t-heldout-base", lambda: _plain("two"))
        assert tokens.for_model("no-such-family-7", nearest=True).base.source == "two"
        assert isinstance(tokens.get("claude-estimate"), EstimateTokenizer)
    finally:  # leave the registry as the other tests know it
        tokens._TOKENIZERS.remove("t-heldout-base")
        tokens._INSTANCES.pop("t-heldout-base", None)
        tokens._INSTANCES.pop("t-heldout-base~nearest", None)


def _plain(source: str) -> tokens.Tokenizer:
    class Chars(tokens.Tokenizer):
        def _encode_chunk(self, text: str) -> list[int]:
            return [ord(c) for c in text]

    return Chars("t-heldout-base", source=source)
