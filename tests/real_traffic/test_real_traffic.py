"""Real recorded traffic (../shared/real/cassettes and recorded-usage): every
body stored as sent re-renders byte for byte, detection names the provider
its URL names, every cassette imports or is reported with a reason, and the
usage each response reported is kept. Skipped when ../shared is absent."""

from __future__ import annotations

import json
import os
import re
from pathlib import Path
from urllib.parse import unquote, urlsplit

import pytest

from fidelity.capture.importers import import_file
from fidelity.capture.survey import survey

_HOSTS = (  # host suffix (and path pattern) -> the provider a reader of the URL names, written out by hand
    ("api.anthropic.com", "", "anthropic"),
    ("amazonaws.com", r"anthropic\..*/invoke", "anthropic"),  # Claude through InvokeModel: Messages API bodies
    ("amazonaws.com", "", "bedrock"),
    ("api.openai.com", "", "openai"),
    ("openai.azure.com", "", "openai"),
    ("generativelanguage.googleapis.com", "", "gemini"),
    ("openrouter.ai", "", "openrouter"),
    ("api.deepseek.com", "", "deepseek"),
    ("aliyuncs.com", "", "dashscope"),
)


def _named_by_hand(url: str) -> str | None:
    parts = urlsplit(url)
    host = (parts.hostname or "").lower()
    for suffix, mark, name in _HOSTS:
        if host.endswith(suffix) and re.search(mark, unquote(parts.path)):
            return name
    return None


@pytest.fixture(scope="module")
def real(request: pytest.FixtureRequest) -> Path:
    from conftest import SHARED_REAL

    if not (SHARED_REAL / "cassettes").is_dir() or not (SHARED_REAL / "recorded-usage").is_dir():
        pytest.skip("../shared/real is absent")
    return SHARED_REAL


@pytest.fixture(scope="module")
def surveyed(real: Path):  # type: ignore[no-untyped-def]
    return survey(real / "cassettes", real / "recorded-usage", keep=20)


def test_every_body_stored_as_sent_round_trips(surveyed) -> None:  # type: ignore[no-untyped-def]
    assert surveyed.round_trip_checked >= 170  # 175 when written; the data is fixed
    assert surveyed.round_trip_ok == surveyed.round_trip_checked, surveyed.round_trip_failures


def test_detection_names_the_urls_provider(surveyed) -> None:  # type: ignore[no-untyped-def]
    assert surveyed.url_named == surveyed.requests > 250
    assert surveyed.detected_as_url == surveyed.url_named, surveyed.detection_failures


def test_every_source_imports_or_has_a_reason(surveyed) -> None:  # type: ignore[no-untyped-def]
    assert surveyed.imported + len(surveyed.failed) == surveyed.sources >= 160
    assert all(reason and "\n" not in reason and "Traceback" not in reason for _, reason in surveyed.failed)
    # non-generation calls are recognised, not mislabelled
    for reason in ("embeddings", "multipart upload", "token counting", "cache management"):
        assert surveyed.skipped[reason] >= 1
    assert surveyed.unsupported == {"bedrock-converse": 17}
    assert surveyed.with_usage == surveyed.requests


def test_detection_against_a_hand_written_host_table(real: Path) -> None:
    checked = 0
    for path in sorted((real / "cassettes").glob("*/*.yaml")) + sorted((real / "recorded-usage").rglob("*.yaml")):
        for snap in import_file(path).snapshots:
            expected = _named_by_hand(snap.url or "")
            if expected is None:
                continue
            checked += 1
            assert snap.family == expected, (snap.source, snap.url, snap.provider)
            if expected in ("openai", "openrouter", "deepseek", "dashscope"):
                assert snap.provider != "anthropic-messages" or "/messages" in (snap.url or "")
    assert checked >= 290


def test_anthropic_bodies_are_never_openai_family(real: Path) -> None:
    """The issue's failure: 43 of 126 Anthropic bodies went to DashScope or DeepSeek."""
    n = 0
    for path in sorted((real / "cassettes" / "llm-anthropic").glob("*.yaml")) + sorted(
            (real / "recorded-usage").rglob("*anthropic*.yaml")):
        for snap in import_file(path).snapshots:
            if "anthropic.com" in (snap.url or ""):
                n += 1
                assert (snap.provider, snap.family) == ("anthropic-messages", "anthropic"), snap.source
    assert n >= 60


def test_usage_matches_the_recorded_figures(real: Path) -> None:
    """pairs.jsonl (written by whoever collected the data) lists each
    response's cache figures; the importers' usage must agree."""
    rows = [json.loads(line) for line in (real / "recorded-usage" / "pairs.jsonl").read_text().splitlines() if line]
    by_name: dict[str, list[Path]] = {}
    for dirpath, _, files in os.walk(real / "recorded-usage"):
        for f in files:
            by_name.setdefault(f, []).append(Path(dirpath) / f)
    imported: dict[Path, object] = {}
    compared = 0
    for row in rows:
        candidates = [p for p in by_name.get(Path(row["path"]).name, []) if str(p).endswith(row["path"])]
        if not candidates:
            continue  # the collector listed a cassette that was not kept
        path = candidates[0]
        if path not in imported:
            imported[path] = import_file(path)
        snaps = [s for s in imported[path].snapshots  # type: ignore[attr-defined]
                 if s.source.endswith((f"/interactions/{row['idx']}/request", f"/entries/{row['idx']}"))]
        if not snaps:
            continue  # a cache-management or token-counting call: skipped with a reason
        usage = snaps[0].usage
        assert usage is not None, row
        assert (usage["cache_read"] or 0) == (row["cache_read"] or 0), (row["path"], usage, row)
        if row["provider"] == "anthropic":
            assert (usage["cache_write"] or 0) == (row["cache_write"] or 0), (row["path"], usage, row)
        compared += 1
    assert compared >= 200


def test_survey_command_prints_the_counts(real: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from fidelity.capture.survey import main

    rc = main([str(real / "cassettes"), str(real / "recorded-usage")])
    out = capsys.readouterr().out
    assert rc == 0
    assert "round trip render(parse(b)) == b: 175/175 (100.0%)" in out
    assert "detection names the URL's provider: 295/295 (100.0%)" in out
