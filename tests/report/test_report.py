"""The economics the report pins, per session × variant × provider.

Scoring runs once per module (the heavy part); each test reads rows.
"""

from __future__ import annotations

import json
from dataclasses import replace

import pytest

from fidelity import compose, fixtures, score, wire
from fidelity.model import Route
from fidelity.score import HEAD_KINDS

FX = fixtures.load()
VARIANTS = compose.load_variants()
ALL = [p.dialect for p in FX.providers if p.dialect in wire.names()]
CODING_PROVIDERS = ["openai-chat", "anthropic-messages", "gemini", "deepseek"]


def _subset(names):
    return fixtures.FixtureSet(FX.source, tuple(s for s in FX.sessions if s.name in names), FX.providers,
                               FX.compositions)


@pytest.fixture(scope="module")
def small() -> score.Score:
    """Both short sessions, every variant, every provider."""
    return score.score(_subset({"first-turn", "in-flight"}), VARIANTS)


@pytest.fixture(scope="module")
def coding() -> score.Score:
    """The long session: every variant on four providers."""
    return score.score(_subset({"coding-agent"}), VARIANTS, providers=CODING_PROVIDERS)


@pytest.fixture(scope="module")
def coding_one_shot() -> score.Score:
    return score.score(_subset({"coding-agent"}), [compose.get_variant("one-shot-fork")])


def _rows(*scores):
    return [r for s in scores for r in s.rows]


def test_every_combination_scored_or_explained(small, coding):
    assert len(small.rows) + len(small.skipped) == 2 * len(VARIANTS) * len(ALL)
    for k in small.skipped + coding.skipped:
        assert k.reason


def test_one_shot_fork_loses_nothing_on_any_provider(coding_one_shot, small):
    rows = [r for r in _rows(coding_one_shot, small) if r.variant == "one-shot-fork"]
    assert {r.dialect for r in rows} == set(ALL)
    for r in rows:
        assert r.lost == 0, (r.session, r.dialect)
        assert r.reused == r.inheritable
        if r.session == "coding-agent":
            assert r.inherited > 20_000  # head + 22 completed turns
            assert r.segment is not None and r.segment[0] == "message"


def test_continuable_fork_loses_the_whole_inherited_history(coding, small):
    for r in _rows(coding, small):
        if r.variant != "continuable-fork" or r.session == "in-flight":
            continue
        head = sum(n for k, n in r.regions if k in HEAD_KINDS)
        assert r.region in HEAD_KINDS, (r.session, r.dialect)
        assert r.reused < head  # reuse stops inside the head ...
        assert r.lost >= r.inheritable - head  # ... so every inherited message is re-prefilled


@pytest.mark.parametrize("name", ["persona", "tool-filter", "tool-filter-code-mode", "structured-output"])
def test_head_deltas_lose_everything_after_the_changed_segment(coding, small, name):
    one_shot = {(r.session, r.dialect): r for r in _rows(coding, small) if r.variant == "one-shot-fork"}
    for r in _rows(coding, small):
        if r.variant != name:
            continue
        assert r.region in HEAD_KINDS, (r.session, r.dialect, r.region)
        assert r.reused <= r.common_prefix
        if r.inherited == 0 and r.lost == 0:
            # nothing inherited, and DashScope's explicit head entry (system
            # prompt, which its template reads before the tools) ends before the change
            assert r.provider == "dashscope" and r.segment[0] == "tools", (r.session, r.dialect)
            continue
        assert r.lost == r.inheritable - r.reused > 0
        assert r.reused < one_shot[(r.session, r.dialect)].reused


def test_route_change_loses_everything(coding, small):
    rows = [r for r in _rows(coding, small) if r.variant == "route-change"]
    assert rows
    for r in rows:
        assert r.reused == 0 and r.lost == r.inheritable
        assert r.model != next(p.model for p in FX.providers if p.dialect == r.dialect)


def test_spawn_inherits_nothing(coding, small):
    for r in _rows(coding, small):
        if r.variant == "spawn":
            assert r.inherited == 0 and r.inheritable == 0 and r.lost == 0
            assert r.child_prompt < r.parent_prompt


def test_siblings_share_the_prefix_up_to_the_directive(coding, small):
    rows = [r for r in _rows(coding, small) if r.variant == "sibling-fanout"]
    assert rows
    variant = compose.get_variant("sibling-fanout")
    sessions = {s.name: s for s in FX.sessions}
    for r in rows:
        assert len(r.siblings) == 3
        history = replace(sessions[r.session].history, route=Route(r.provider, r.model))
        kids = variant.children(history, sessions[r.session].siblings)
        d = wire.get(r.dialect)
        for s, kid, directive in zip(r.siblings, kids[1:], sessions[r.session].siblings[1:]):
            segs = {(g.kind, g.index): g for g in d.cache_view(d.render(kid))}
            # the first divergence from the first sibling is the segment holding the directive
            assert s.segment is not None and s.segment[0] == "message"
            held = segs[s.segment].data.decode()
            forms = {json.dumps(directive, ensure_ascii=a)[1:-1] for a in (True, False)}
            assert any(f in held for f in forms), (r.session, r.dialect)
            assert s.cause == "messages_rewritten"
            if r.cache_model == "dashscope-explicit":
                # explicit caching writes at markers only: the first sibling's
                # marked head, not its placeholders, is there to read
                assert 0 < s.reused <= s.child_prompt
                continue
            assert s.reused >= r.reused  # the first sibling also wrote its placeholders
            if r.provider != "anthropic":  # explicit breakpoints only at the head in these fixtures
                assert s.child_prompt - s.reused < 700  # only the directive (and granularity) is new


@pytest.mark.parametrize("name,cause", [
    ("defect-timestamp", "system_changed"),
    ("defect-tool-order", "tools_changed"),
    ("defect-schema-key-order", "tools_changed"),
    ("defect-argument-key-order", "messages_rewritten"),
    ("defect-reasoning-dropped", "messages_rewritten"),
])
def test_head_defects_are_detected_with_the_right_cause(coding, name, cause):
    rows = [r for r in coding.rows if r.variant == name]
    detected = [r for r in rows if r.lost > 0]
    assert detected, f"{name} invisible on every provider"
    for r in detected:
        assert r.cause == cause, (r.dialect, r.cause, r.cause_detail)
    for r in rows:
        assert r.meets_expectation


def test_timestamp_divergence_points_into_the_environment_section(coding):
    r = coding.row("coding-agent", "defect-timestamp", "deepseek")
    assert r.pointer is not None and r.lost > 20_000


def test_declared_cache_preserving_variants_lose_nothing(coding, small, coding_one_shot):
    rows = _rows(coding, small, coding_one_shot)
    assert not [(r.session, r.variant, r.dialect) for r in rows if r.cache_preserving and r.lost]
    assert not [(r.session, r.variant, r.dialect) for r in rows if not r.meets_expectation]


def test_costs_name_their_price_row_and_spawn_baseline(coding):
    for r in coding.rows:
        assert r.cost is not None
        assert r.cost.source.startswith("http") and r.cost.as_of
        assert r.cost.per_1000 == pytest.approx(r.cost.per_child * 1000)
        assert r.cost.savings_vs_spawn_per_child is not None
    one = coding.row("coding-agent", "one-shot-fork", "deepseek").cost
    cont = coding.row("coding-agent", "continuable-fork", "deepseek").cost
    assert one.per_child < cont.per_child < cont.cold_per_child * 1.0001


def test_self_hosted_engines_have_figures_but_no_price(small):
    rows = [r for r in small.rows if r.dialect in ("vllm", "sglang")]
    assert rows and all(r.cost is None and r.note for r in rows)


def test_placement_variants(coding, small):
    """Breakpoint placement only matters where breakpoints do, and Claude
    Code's moving breakpoints let a one-shot fork read its whole history."""
    rows = {(r.session, r.variant, r.dialect): r for r in _rows(coding, small)}
    one = rows[("coding-agent", "one-shot-fork", "anthropic-messages")]
    assert one.reused == one.inheritable and one.reused > 20_000  # the history, not only the head
    none = rows[("coding-agent", "breakpoints-none", "anthropic-messages")]
    assert none.reused == 0 and none.lost == one.reused
    head = rows[("coding-agent", "breakpoints-system-only", "anthropic-messages")]
    assert 0 < head.reused < one.reused and head.lost == one.reused - head.reused
    auto = rows[("coding-agent", "breakpoints-automatic", "anthropic-messages")]
    assert head.reused < auto.reused <= one.reused
    # a child with no inherited message: automatic caching never wrote the head alone
    assert rows[("in-flight", "breakpoints-automatic", "anthropic-messages")].reused == 0
    for (session, variant, dialect), r in rows.items():
        if variant.startswith("breakpoints-"):
            assert r.meets_expectation, (session, variant, dialect)
            if r.provider not in ("anthropic", "dashscope"):
                assert r.lost == 0 and r.reused == rows[(session, "one-shot-fork", dialect)].reused


def test_parent_requests_are_every_turn():
    history = FX.sessions[0].history
    reqs = compose.parent_requests(history)
    assert len(reqs) == sum(m.role == "assistant" for m in history.messages)
    assert all(r.messages[-1].role != "assistant" for r in reqs)
    assert reqs[-1] == compose.parent_request(history)
    for a, b in zip(reqs, reqs[1:]):
        assert b.messages[: len(a.messages)] == a.messages  # each extends the one before
