"""``fidelity report`` on several processes, and the memos that let each
body be rendered, parsed and viewed once per report.

Speed is measured in ``benchmarks/report.py``; these tests pin that the
shortcuts change no figure.
"""

from __future__ import annotations

import argparse
from dataclasses import replace

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from fidelity import compose, fixtures, score, wire
from fidelity.cache import prompts, whole_view
from fidelity.cli import main
from fidelity.commands import report
from fidelity.model import Route

FX = fixtures.load()
SHORT = fixtures.FixtureSet(FX.source, tuple(s for s in FX.sessions if s.name == "first-turn"), FX.providers,
                            FX.compositions)
VARIANTS = [compose.get_variant(n) for n in ("one-shot-fork", "persona", "sibling-fanout", "breakpoints-none")]
PROVIDERS = ["openai-chat", "anthropic-messages", "dashscope"]


def test_rows_are_the_same_on_one_process_or_several() -> None:
    serial = score.score(SHORT, VARIANTS, providers=PROVIDERS, jobs=1)
    parallel = score.score(SHORT, VARIANTS, providers=PROVIDERS, jobs=2)
    assert parallel == serial
    assert [(r.session, r.variant, r.dialect) for r in serial.rows] == [
        ("first-turn", v.name, p) for v in VARIANTS for p in PROVIDERS]  # session, variant, provider order


def test_progress_names_every_row_once_with_any_jobs() -> None:
    for jobs in (1, 2):
        seen: list[str] = []
        score.score(SHORT, VARIANTS[:2], providers=PROVIDERS[:2], jobs=jobs, progress=seen.append)
        assert sorted(seen) == sorted(f"first-turn / {v.name} / {p}" for v in VARIANTS[:2] for p in PROVIDERS[:2])


def test_no_scorer_is_left_behind_after_a_serial_score() -> None:
    score.score(SHORT, VARIANTS[:1], providers=PROVIDERS[:1], jobs=1)
    assert score._WORK == []


@pytest.mark.parametrize("value", ["0", "-2", "two", ""])
def test_jobs_must_be_a_positive_whole_number(value: str, capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exc:
        main(["report", "--jobs", value, "--out", "unused"])
    assert exc.value.code == 2
    assert "--jobs" in capsys.readouterr().err


def test_the_jobs_option_reaches_the_scorer(monkeypatch: pytest.MonkeyPatch) -> None:
    seen: list[int | None] = []
    real = score.score

    def spy(*args: object, **kwargs: object) -> score.Score:
        seen.append(kwargs.get("jobs"))  # type: ignore[arg-type]
        return real(*args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(score, "score", spy)
    parser = argparse.ArgumentParser()
    report.add_arguments(parser)
    for argv, expected in ((["--jobs", "3"], 3), ([], None)):
        seen.clear()
        report.build_score(parser.parse_args([*argv, "--variants", "spawn", "--providers", "openai-chat",
                                              "--fixtures", "fidelity/data/fixtures"]))
        assert seen == [expected]


def _body(dialect: str) -> bytes:
    d = wire.get(dialect)
    return d.render(replace(SHORT.sessions[0].history, route=Route(d.provider, "gpt-4.1" if d.provider == "openai"
                                                                     else "claude-sonnet-4-6")))


@pytest.mark.parametrize("dialect", ["openai-chat", "anthropic-messages"])
def test_a_remembered_prompt_takes_the_callers_time_and_label(dialect: str) -> None:
    body = _body(dialect)
    prompts._PROMPTS.clear()
    first = prompts.cache_prompt(body, dialect=dialect, time=1.0, label="a")
    again = prompts.cache_prompt(body, dialect=dialect, time=7.0, label="b")
    prompts._PROMPTS.clear()
    fresh = prompts.cache_prompt(body, dialect=dialect, time=7.0, label="b")
    assert (again.request.time, again.request.label) == (7.0, "b")
    assert (first.request.time, first.request.label) == (1.0, "a")  # the first caller's request is not changed
    assert again == fresh


def test_the_prompt_memo_is_bounded() -> None:
    body = _body("openai-chat")
    prompts._PROMPTS.clear()
    for k in range(whole_view.MEMO_SIZE + 5):
        prompts.cache_prompt(body, dialect="openai-chat", model=f"gpt-4.1-{k}")
    assert len(prompts._PROMPTS) == whole_view.MEMO_SIZE


def test_a_remembered_view_is_a_fresh_list_of_the_same_segments() -> None:
    body = _body("openai-chat")
    d = wire.get("openai-chat")
    first = whole_view.view_of(d, body)
    first.clear()  # a caller's list is its own
    assert whole_view.view_of(d, body) == d.cache_view(body)


def test_a_request_is_rendered_once_per_scorer(monkeypatch: pytest.MonkeyPatch) -> None:
    d = wire.get("openai-chat")
    calls: list[object] = []
    real = type(d).render

    def counting(self: object, request: object) -> bytes:
        calls.append(request)
        return real(self, request)  # type: ignore[arg-type]

    monkeypatch.setattr(type(d), "render", counting)
    scorer = score._Scorer(score.pricing.load(), VARIANTS)
    request = replace(SHORT.sessions[0].history, route=Route("openai", "gpt-4.1"))
    assert scorer.render(request, "openai-chat") == scorer.render(request, "openai-chat") == real(d, request)
    assert len(calls) == 1


def test_a_serial_score_restores_the_collectors_thresholds() -> None:
    import gc

    before = gc.get_threshold()
    score.score(SHORT, VARIANTS[:1], providers=PROVIDERS[:1], jobs=1)
    assert gc.get_threshold() == before


def test_a_large_body_is_not_remembered(monkeypatch: pytest.MonkeyPatch) -> None:
    body = _body("openai-chat")
    monkeypatch.setattr(prompts, "MEMO_BODY", len(body) - 1)
    monkeypatch.setattr(whole_view, "MEMO_BODY", len(body) - 1)
    prompts._PROMPTS.clear()
    whole_view._VIEWS.clear()
    got = prompts.cache_prompt(body, dialect="openai-chat", time=3.0, label="x")
    assert prompts._PROMPTS == {} and whole_view._VIEWS == {}
    monkeypatch.undo()
    assert got == prompts.cache_prompt(body, dialect="openai-chat", time=3.0, label="x")


def test_the_billed_counts_tokenizers_are_loaded_before_the_workers_start(monkeypatch: pytest.MonkeyPatch) -> None:
    # Claude's and Gemini's calibrated estimate (numpy) loaded once in the parent,
    # not once in each worker that counts for them
    loaded: list[str] = []
    real = score.billing_tokenizer

    def spy(tok: object, model: str = "") -> object:
        loaded.append(model)
        return real(tok, model)  # type: ignore[arg-type]

    monkeypatch.setattr(score, "billing_tokenizer", spy)
    providers = ["openai-chat", "anthropic-messages", "gemini"]
    parallel = score.score(SHORT, VARIANTS[:1], providers=providers, jobs=2)
    assert len(loaded) == len(providers)  # once each, in the parent; the workers' calls do not reach this list
    monkeypatch.undo()
    assert parallel == score.score(SHORT, VARIANTS[:1], providers=providers, jobs=1)


@settings(max_examples=200, deadline=None)
@given(st.integers(1, 5), st.lists(st.integers(1, 4), min_size=1, max_size=5), st.integers(1, 40))
def test_tasks_hold_every_unit_once_one_tokenizer_each(n_sessions: int, sizes: list[int], jobs: int) -> None:
    groups, k = [], 0
    for size in sizes:  # providers 0.. in groups of one tokenizer each
        groups.append(list(range(k, k + size)))
        k += size
    tasks = score._tasks(n_sessions, groups, jobs)
    units = [u for t in tasks for u in t]
    assert sorted(units) == [(i, p) for i in range(n_sessions) for p in range(k)]
    assert all(len({next(g for g, ks in enumerate(groups) if p in ks) for _, p in t}) == 1 for t in tasks)
    assert [len(t) for t in tasks] == sorted((len(t) for t in tasks), reverse=True)
    assert len(tasks) >= min(jobs, n_sessions * len(groups))  # every process gets work where there is enough
    if jobs <= len(groups):  # enough tasks already: a tokenizer's providers stay in one process for all sessions
        assert len(tasks) == len(groups)


def test_on_two_cores_each_vocabulary_is_one_task() -> None:
    groups = score._vocabularies(FX.providers)
    names = [[FX.providers[k].dialect for k in g] for g in groups]
    assert names == [["openai-chat", "openai-responses", "anthropic-messages", "gemini"], ["deepseek"],
                     ["dashscope", "vllm", "sglang"]]  # Claude's and Gemini's estimates stretch o200k_base's ids
    tasks = score._tasks(3, groups, 2)
    assert [len(t) for t in tasks] == [12, 9, 3]  # 12 and 9 + 3 units on the two processes
    assert [sorted({i for i, _ in t}) for t in tasks] == [[0, 1, 2]] * 3
