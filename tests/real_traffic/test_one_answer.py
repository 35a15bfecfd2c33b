"""One request, one answer: ``replay``, ``scan --json`` and ``tokens-check``
read every recording of ``../shared/real`` and ``fixtures/harness`` (each
through its library function, in process) and must agree, request by
request, on the prompt, read and written tokens and on what is set apart;
and on every captured parent/child pair (``fixtures/harness``,
``fixtures/harness-matrix``), ``diff``, the proxy's verdict and ``replay``
name one read and one write for the child. On the same snapshot folders
``fidelity diff FOLDER --json`` gives each child replay's prompt, read and
written tokens, and ``gate --snapshots`` the lost tokens ``diff FOLDER``
gives; on the DeepSeek Harness logs of ``../shared/real``, ``fidelity
calibrate --json`` gives each request replay's prompt and read."""

from __future__ import annotations

from collections import Counter, defaultdict
from pathlib import Path
from typing import Any

import pytest

from fidelity.replay import Row, replay_recording
from fidelity.scan import scan
from fidelity.tokens_check import check
from fidelity.traffic.sources import READ_KINDS, Source, list_sources, read

ROOT = Path(__file__).resolve().parents[2]
REAL = ROOT.parent / "shared" / "real"


def _recordings() -> list[Any]:
    found: list[Source] = []
    for root in (ROOT / "fixtures" / "harness", REAL):
        if root.is_dir():
            found += [s for s in list_sources(root) if s.kind in READ_KINDS and read(s)]
    out = []
    for s in found:
        name = str(s.path.relative_to(ROOT.parent if s.path.is_relative_to(REAL) else ROOT))
        out.append(pytest.param(s, id=name))
    return out


RECORDINGS = _recordings()


def _decision(row: Row) -> str | None:
    """Why a replay row is in no figure: skipped (not simulated) or set apart."""
    return row.note if row.predicted is None else row.apart


@pytest.mark.skipif(not RECORDINGS, reason="no recordings")
@pytest.mark.parametrize("source", RECORDINGS)
def test_replay_scan_and_tokens_check_agree(source: Source) -> None:
    exchanges = read(source)
    rows = replay_recording(exchanges)
    reported = [ex.usage is not None and isinstance(ex.usage.get("prompt"), int) for ex in exchanges]

    # 1. what is set apart, and why: tokens-check leaves out exactly the requests replay leaves out
    tc = check([source.path if source.kind != "snapshots" else source.path])
    replay_apart = Counter(_decision(r) for r, rep in zip(rows, reported) if rep and _decision(r) is not None)
    tc_apart = Counter({reason: n for by in tc.apart.values() for reason, n in by.items()})
    assert tc_apart == replay_apart

    # 2. per request, the prompt tokens-check predicts is replay's predicted prompt
    by_where = {(r.path, r.where): r.predicted for r in tc.rows}
    for ex, row in zip(exchanges, rows):
        got = by_where.get((ex.source, ex.where))
        if got is not None:
            assert row.predicted is not None and row.predicted.prompt == got, (ex.source, ex.where)
    scored = sum(1 for r, rep in zip(rows, reported) if rep and _decision(r) is None)
    assert len(tc.rows) + sum(n for reason, n in tc.skipped.items() if reason not in replay_apart) == scored

    # 3. scan: per provider and model, the requests, prompt, read and written tokens replay predicts
    want: dict[tuple[str, str], list[int]] = defaultdict(lambda: [0, 0, 0, 0])
    for r in rows:
        if r.predicted is not None:
            t = want[(r.provider or "", r.model or "")]
            t[0] += 1
            t[1] += r.predicted.prompt or 0
            t[2] += r.predicted.cache_read or 0
            t[3] += r.predicted.cache_write or 0
    result = scan([source.path], workers=1)
    got_scan = {(m["provider"], m["model"]): [m["requests"], m["prompt_tokens"], m["read_tokens"],
                                             m["written_tokens"]] for m in result["by_model"]}
    assert got_scan == dict(want)
    # and the same requests set apart, by reason
    scan_apart: Counter[str] = Counter()
    for m in result["by_model"]:
        for a in (m.get("reported") or {}).get("set_apart", []):
            scan_apart[a["reason"]] += a["requests"]
    simulated_apart = Counter(r.apart for r, rep in zip(rows, reported) if rep and r.predicted is not None and r.apart)
    assert scan_apart == simulated_apart


def _pairs() -> list[Any]:
    """Every captured parent/child folder (the harness fixtures and the matrix's captures)."""
    out = []
    for root in (ROOT / "fixtures" / "harness", ROOT / "fixtures" / "harness-matrix"):
        for child in sorted(root.rglob("child.snapshot")) if root.is_dir() else ():
            out.append(pytest.param(child.parent, id=str(child.parent.relative_to(ROOT))))
    return out


@pytest.mark.parametrize("folder", _pairs())
def test_diff_and_the_proxy_verdict_read_what_replay_reads(folder: Path) -> None:
    """``diff`` on a captured pair, the proxy's verdict on it and ``replay`` of
    the folder name one read and one write for the child (one simulator, one
    endpoint rule)."""
    from fidelity.capture import snapshot
    from fidelity.pairs.folder import compare_pair
    from fidelity.providers import placed_url
    from fidelity.proxy.parent import judge

    parent, child = (snapshot.Loaded(p, snap.body, snap) for p in (folder / "parent.snapshot", folder / "child.snapshot")
                     for snap in (snapshot.read(p),))
    exchanges = read(Source("snapshots", folder))
    by_body = {ex.body: row for ex, row in zip(exchanges, replay_recording(exchanges))}
    row = by_body[child.body]
    assert row.predicted is not None, row.note
    d = compare_pair(parent, child)
    assert not hasattr(d, "reason"), d
    assert (d.cache.predicted_cached, d.cache.written) == (row.predicted.cache_read or 0, row.predicted.cache_write or 0)
    assert parent.meta is not None
    v = judge(parent.body, child.body, d.dialect, model=d.model, endpoint=placed_url(parent.meta.url))
    assert (v.predicted_cached, v.predicted_written) == (d.cache.predicted_cached, d.cache.written)


def _run_json(capsys: pytest.CaptureFixture[str], *argv: str) -> Any:
    """A command run in process as the console script runs it; its JSON."""
    import json

    from fidelity import cli

    assert cli.main(list(argv)) == 0
    return json.loads(capsys.readouterr().out)


@pytest.mark.parametrize("folder", _pairs())
def test_diff_folder_and_gate_snapshots_give_replays_figures(folder: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """``fidelity diff FOLDER --json``: per child, replay's prompt, read and
    written tokens; ``fidelity gate --snapshots`` (its rows): per child, the
    lost tokens ``diff FOLDER`` reports."""
    from fidelity.gate_rows import rows_from_snapshots

    exchanges = read(Source("snapshots", folder))
    rows = {Path(ex.source).name: row for ex, row in zip(exchanges, replay_recording(exchanges))}
    doc = _run_json(capsys, "diff", str(folder), "--json")
    assert doc
    lost: dict[str, int] = {}
    for entry in doc:
        name = Path(entry["pair"]["child"]).name
        pred = rows[name].predicted
        assert pred is not None, rows[name].note
        got = (entry["tokens"]["child_prompt"], entry["cache"]["predicted_cached"], entry["cache"]["written"])
        assert got == (pred.prompt, pred.cache_read or 0, pred.cache_write or 0), name
        lost[name] = entry["cache"]["lost"]
    gated = {r.key: r.lost_tokens for r in rows_from_snapshots(folder)}
    assert gated == lost


DSH = REAL / "deepseek-harness"


@pytest.mark.skipif(not DSH.is_dir(), reason="no DeepSeek Harness logs")
def test_calibrate_gives_replays_prompt_and_read(capsys: pytest.CaptureFixture[str]) -> None:
    """``fidelity calibrate --json`` and ``fidelity replay`` on the DeepSeek
    Harness logs: per request, one predicted prompt and one predicted read."""
    from fidelity.replay import replay

    doc = _run_json(capsys, "calibrate", str(DSH), "--json")
    calibrated = {(s["path"], i): (st["predicted_prompt"], st["predicted_cached"])
                  for s in doc["sessions"] for i, st in enumerate(s["steps"])}
    replayed = {(r.source, r.index): (r.predicted.prompt, r.predicted.cache_read)
                for r in replay(DSH).rows if r.predicted is not None}
    assert calibrated and calibrated == replayed


def _imported() -> list[Any]:
    """Every recording of ``../shared/real`` the importers turn into snapshots."""
    if not REAL.is_dir():
        return []
    return [pytest.param(s, id=str(s.path.relative_to(ROOT.parent)))
            for s in list_sources(REAL) if s.kind in ("vcr", "har", "jsonl")]


@pytest.mark.parametrize("source", _imported())
def test_diff_folder_of_an_imported_recording_gives_replays_figures(source: Source, tmp_path: Path,
                                                                     capsys: pytest.CaptureFixture[str]) -> None:
    """A recording of ``../shared/real`` imported as snapshots (``fidelity
    import``) and read by ``fidelity diff FOLDER --json``: each compared child
    has the prompt, read and written tokens ``replay`` gives that request of
    the recording (requests sent after the cache ran out included)."""
    from fidelity import cli
    from fidelity.capture import snapshot

    exchanges = read(source)
    rows = replay_recording(exchanges)
    assert cli.main(["import", str(source.path), str(tmp_path / "snaps")]) in (0, 2)
    capsys.readouterr()
    folder = tmp_path / "snaps"
    if not folder.is_dir() or len(list(folder.iterdir())) < 2:
        return  # nothing to pair (embeddings, one request)
    # the k-th snapshot of a body is the k-th request of the recording with that body
    by_body: dict[bytes, list[Row]] = defaultdict(list)
    for ex, row in zip(exchanges, rows):
        by_body[ex.body].append(row)
    seen: Counter[bytes] = Counter()
    row_of: dict[str, Row] = {}
    for path in snapshot.iter_folder(folder):
        body = snapshot.read(path).body
        if seen[body] < len(by_body[body]):
            row_of[path.name] = by_body[body][seen[body]]
        seen[body] += 1
    if cli.main(["diff", str(folder), "--json"]) != 0:
        capsys.readouterr()
        return  # no pair fidelity compares (another API)
    import json

    for entry in json.loads(capsys.readouterr().out):
        row = row_of[Path(entry["pair"]["child"]).name]
        if row.predicted is None:
            continue  # replay does not simulate it (set apart as skipped): no figure to match
        got = (entry["tokens"]["child_prompt"], entry["cache"]["predicted_cached"], entry["cache"]["written"])
        assert got == (row.predicted.prompt, row.predicted.cache_read or 0, row.predicted.cache_write or 0), \
            entry["pair"]["child"]
