"""One request, one answer: ``replay``, ``scan --json`` and ``tokens-check``
read every recording of ``../shared/real`` and ``fixtures/harness`` (each
through its library function, in process) and must agree, request by
request, on the prompt, read and written tokens and on what is set apart.
(``diff`` joins this test when its figures come from the simulator.)"""

from __future__ import annotations

from collections import Counter, defaultdict
from pathlib import Path
from typing import Any

import pytest

from fidelity.replay import Row, replay_recording
from fidelity.scan import scan
from fidelity.tokens.check import check
from fidelity.traffic.sources import READ_KINDS, Source, list_sources, read

ROOT = Path(__file__).resolve().parent.parent
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
