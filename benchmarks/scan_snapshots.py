"""Benchmark ``fidelity scan`` on a folder of proxy snapshots against the
same requests as one JSONL log.

    python benchmarks/scan_snapshots.py              # 2,000 requests (the README figure)
    python benchmarks/scan_snapshots.py --requests 300

The requests are :mod:`fidelity.scan.synthetic`'s (sessions that grow turn
by turn, forks, tool changes). The log holds them one per line; the folder
holds each as the snapshot ``fidelity proxy`` writes (metadata line, exact
body, the request time), in the log's order. Both are scanned on one
worker; the figure is CPU seconds of the whole process tree (so that other
load on a shared machine does not count), the median of ``--runs``, and the
ratio folder / log. The issue's bar is 2x: a snapshot folder costs a file
open and a metadata line per request, not a second reading path. The
requests scanned must be the same number on both sides.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

import orjson  # noqa: E402

from fidelity.capture import snapshot  # noqa: E402
from fidelity.scan import synthetic  # noqa: E402

_WRAPPER = ("import resource, subprocess, sys; p = subprocess.run(sys.argv[1:], stdout=subprocess.PIPE); "
            "r = resource.getrusage(resource.RUSAGE_CHILDREN); sys.stdout.buffer.write(p.stdout); "
            "sys.stderr.write(f'\\n@@ {r.ru_utime + r.ru_stime}\\n'); sys.exit(p.returncode)")


def _cpu(cmd: list[str]) -> tuple[float, bytes]:
    """CPU seconds of ``cmd`` and its children, and its stdout."""
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    proc = subprocess.run([sys.executable, "-c", _WRAPPER, *cmd], capture_output=True, env=env)
    if proc.returncode != 0:
        raise SystemExit(f"failed: {' '.join(cmd)}\n{proc.stderr.decode()[-2000:]}")
    return float(proc.stderr.decode().rsplit("@@ ", 1)[1].split()[0]), proc.stdout


def _write(work: Path, requests: int, seed: int) -> tuple[Path, Path]:
    """The log and the snapshot folder of the first ``requests`` lines."""
    log, folder = work / "log.jsonl", work / "snapshots"
    folder.mkdir()
    lines = []
    for line in synthetic.generate(1 << 40, seed=seed):
        lines.append(line)
        if len(lines) == requests:
            break
    log.write_bytes(b"".join(lines))
    for seq, line in enumerate(lines, start=1):
        rec = orjson.loads(line)
        snap = snapshot.from_request(method="POST", url=rec["url"], headers={"content-type": "application/json"},
                                     body=orjson.dumps(rec["body"]), seq=seq, time=rec["time"], source="capture")
        snapshot.write(folder, snap)
    return log, folder


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--requests", type=int, default=2000)
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        log, folder = _write(Path(tmp), args.requests, args.seed)
        figures = {}
        for name, path in (("jsonl", log), ("snapshots", folder)):
            cmd = [sys.executable, "-m", "fidelity", "scan", str(path), "--json", "--workers", "1"]
            runs = [_cpu(cmd) for _ in range(args.runs)]
            cpu = sorted(c for c, _ in runs)[args.runs // 2]
            report = json.loads(runs[0][1])
            figures[name] = (cpu, report["totals"]["requests"] if "totals" in report else report.get("requests"))
        (log_cpu, log_n), (snap_cpu, snap_n) = figures["jsonl"], figures["snapshots"]
        mb = log.stat().st_size / 1e6
        print(f"{args.requests:,} requests ({mb:.1f} MB as JSONL), scan on 1 worker, median of {args.runs} (CPU s):")
        print(f"  one JSONL log        {log_cpu:6.2f} s   requests scanned: {log_n}")
        print(f"  snapshot folder      {snap_cpu:6.2f} s   requests scanned: {snap_n}")
        print(f"  folder / log         {snap_cpu / log_cpu:6.2f}x  (bar: 2x)")
        if log_n != snap_n:
            raise SystemExit("the two sides scanned a different number of requests")


if __name__ == "__main__":
    main()
