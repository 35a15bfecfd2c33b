"""``fidelity scan`` over Parquet request logs (pyarrow): one row per request,
the JSONL format's members as columns; the same figures as the JSONL log."""

from __future__ import annotations

import datetime as dt
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import orjson
import pytest

from fidelity.errors import InputError
from fidelity.scan import scan, synthetic
from fidelity.scan.records import prepare_inputs

pa = pytest.importorskip("pyarrow")
pq = pytest.importorskip("pyarrow.parquet")

REPO = Path(__file__).resolve().parents[2]
#: what does not depend on how the log was stored (bytes count the lines read)
COMPARED = ("by_cause", "by_where")


def _rows(n_bytes: int = 800_000) -> list[dict[str, Any]]:
    return [orjson.loads(line) for line in synthetic.generate(n_bytes, seed=2)]


def _without_bytes(part: Any) -> Any:
    if isinstance(part, dict):
        return {k: _without_bytes(v) for k, v in part.items() if k != "bytes"}
    if isinstance(part, list):
        return [_without_bytes(v) for v in part]
    return part


def _same_figures(a: dict[str, Any], b: dict[str, Any]) -> None:
    for key in ("totals", "by_model", "by_day"):
        assert _without_bytes(a[key]) == _without_bytes(b[key])
    for key in COMPARED:
        assert a[key] == b[key]
    assert a["totals"]["requests"] > 10 and a["totals"]["breaks"] > 0


def test_parquet_log_gives_the_jsonl_figures(tmp_path: Path) -> None:
    """String bodies, a timestamp column with its zone, usage as JSON text."""
    rows = _rows()
    jsonl = tmp_path / "log.jsonl"
    jsonl.write_bytes(b"".join(orjson.dumps(r) + b"\n" for r in rows))
    times = [dt.datetime.fromisoformat(r["time"].replace("Z", "+00:00")) for r in rows]
    table = pa.table({
        "time": pa.array(times, pa.timestamp("ms", tz="UTC")),
        "url": [r.get("url") for r in rows],
        "session": [r.get("session") for r in rows],
        "user": [r.get("user") for r in rows],
        "body": [orjson.dumps(r["body"]).decode() for r in rows],
        "usage": [orjson.dumps(r["usage"]).decode() if "usage" in r else None for r in rows],
    })
    pq.write_table(table, tmp_path / "log.parquet", row_group_size=100)
    _same_figures(scan([jsonl], workers=1), scan([tmp_path / "log.parquet"], workers=1))


def test_binary_bodies_and_naive_times(tmp_path: Path) -> None:
    """Bodies as bytes (read as ``body_base64``), times without a zone (UTC)."""
    rows = _rows()
    jsonl = tmp_path / "log.jsonl"
    jsonl.write_bytes(b"".join(orjson.dumps(r) + b"\n" for r in rows))
    table = pa.table({
        "time": [dt.datetime.fromisoformat(r["time"].replace("Z", "")) for r in rows],
        "url": [r.get("url") for r in rows],
        "session": [r.get("session") for r in rows],
        "body": pa.array([orjson.dumps(r["body"]) for r in rows], pa.binary()),
    })
    pq.write_table(table, tmp_path / "log.parquet")
    got = scan([tmp_path / "log.parquet"], workers=1)
    _same_figures(scan([jsonl], workers=1), got)
    assert got["bad_lines"]["total"] == 0


def test_a_folder_holds_parquet_logs_too(tmp_path: Path) -> None:
    rows = _rows(200_000)
    (tmp_path / "logs").mkdir()
    pq.write_table(pa.table({"url": [r["url"] for r in rows], "session": [r["session"] for r in rows],
                             "body": [orjson.dumps(r["body"]).decode() for r in rows]}),
                   tmp_path / "logs" / "day1.parquet")
    got = prepare_inputs([tmp_path / "logs"], tmp_path / "work")
    assert [label for _, label in got] == [f"{tmp_path / 'logs' / 'day1.parquet'}#row"]
    assert len(got[0][0].read_bytes().splitlines()) == len(rows)


def test_a_file_that_is_not_parquet_is_one_line_exit_2(tmp_path: Path) -> None:
    bad = tmp_path / "log.parquet"
    bad.write_bytes(b'{"not": "parquet"}\n')
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    run = subprocess.run([sys.executable, "-m", "fidelity", "scan", str(bad)], capture_output=True, env=env,
                         timeout=120)
    assert run.returncode == 2
    err = run.stderr.decode()
    assert err.count("\n") == 1 and str(bad) in err and "Parquet" in err and "Traceback" not in err
    assert bad.read_bytes() == b'{"not": "parquet"}\n'  # inputs are never modified


def test_without_pyarrow_the_error_says_what_to_install(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "log.parquet"
    pq.write_table(pa.table({"body": ["{}"]}), path)
    monkeypatch.setitem(sys.modules, "pyarrow.parquet", None)  # import fails as if not installed
    with pytest.raises(InputError) as got:
        prepare_inputs([path], tmp_path / "work")
    assert "pip install 'fidelity[scan-parquet]'" in str(got.value) and str(path) in str(got.value)


def test_the_example_in_docs_scan_runs(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import re
    import textwrap

    doc = (REPO / "docs" / "scan.md").read_text()
    block = next(b for b in re.findall(r"```python\n(.*?)```", doc, re.S) if "pq.write_table" in b)
    monkeypatch.chdir(tmp_path)
    exec(compile(textwrap.dedent(block), "docs/scan.md", "exec"), {})  # noqa: S102 -- the doc's own example
    got = scan([tmp_path / "requests.parquet"], workers=1)
    assert got["totals"]["requests"] == 1 and got["totals"]["bad_lines"] == 0
