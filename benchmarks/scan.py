"""Benchmark ``fidelity scan`` against ``fidelity diff FOLDER`` on one generated log.

    python benchmarks/scan.py --mb 1024          # the README figure
    python benchmarks/scan.py --mb 30            # while developing

Generates a realistic log (fidelity.scan.synthetic: sessions that grow turn
by turn, forks, parallel agents, tool changes, timestamps) and an
append-only log of the same size, then reports in one run: MB/s per core (log
MB over the CPU seconds of the process and its workers, so that other load
on a shared machine does not count) of ``scan --executor local`` on 1 and 2 workers, peak memory (max RSS of the
scan process and its workers), and MB/s of ``fidelity diff FOLDER`` on a
snapshot folder made from the head of the same log (``--diff-mb``; the diff
is slow enough that its rate is measured on a sample).

One more log holds a single partition: one DeepSeek app (its cache has no
lifetime, so the partition never splits and its cache state only grows), of
``--one-app-mb``; its first third and the whole are scanned on one worker,
and the CPU time per MB of the whole over that of the third says whether the
work grows with the log (1.0) or faster.

Each log is read once before each timed run of it, so that it is in the page
cache and the figures are the scan's CPU, not the disk's. Each command's
startup (imports, tokenizer vocabularies) is measured on its
own: ``scan`` of one line per model, ``diff`` of a two-file folder. Rates are
printed for whole processes (the headline) and with that startup taken off,
the rate a log of another size approaches; the differ's sample is small, so
its startup weighs more in its whole-process rate than in the scan's.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from fidelity.scan import synthetic  # noqa: E402


def _run(cmd: list[str]) -> tuple[float, float, str, float]:
    """Wall seconds, peak RSS in MiB (the largest process among the
    finished children so far: the scan's driver or one of its workers), stdout."""
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    # a wrapper per run, so that its children's peak RSS is this run's alone
    wrapper = ("import resource, subprocess, sys, time; t = time.perf_counter(); "
               "p = subprocess.run(sys.argv[1:], stdout=sys.stdout, stderr=sys.stderr); "
               "w = time.perf_counter() - t; r = resource.getrusage(resource.RUSAGE_CHILDREN); "
               "sys.stderr.write(f'\\n@@ {w} {r.ru_maxrss} {r.ru_utime + r.ru_stime}\\n'); sys.exit(p.returncode)")
    proc = subprocess.run([sys.executable, "-c", wrapper, *cmd], capture_output=True, env=env)
    if proc.returncode != 0:
        raise SystemExit(f"failed: {' '.join(cmd)}\n{proc.stderr.decode()[-2000:]}")
    tail = proc.stderr.decode().rsplit("@@ ", 1)[1].split()
    wall, peak, cpu = float(tail[0]), int(tail[1]) / 1024, float(tail[2])
    return wall, peak, proc.stdout.decode(), cpu


def _snapshots(log: Path, folder: Path, limit: int) -> int:
    """OpenAI requests from the head of ``log`` as one snapshot folder, grouped
    by session (``fidelity diff FOLDER`` pairs consecutive files of one dialect)."""
    import orjson

    from fidelity.capture import snapshot

    folder.mkdir(parents=True, exist_ok=True)
    rows: list[tuple[str, int, bytes, str]] = []
    size = 0
    with open(log, "rb") as fh:
        for n, line in enumerate(fh):
            rec = orjson.loads(line)
            if "openai.com" not in rec["url"]:
                continue
            rows.append((rec["session"], n, orjson.dumps(rec["body"]), rec["url"]))
            size += len(line)
            if size >= limit:
                break
    rows.sort()
    for seq, (_, _, body, url) in enumerate(rows, start=1):
        snapshot.write(folder, snapshot.from_request(method="POST", url=url, headers={}, body=body, seq=seq))
    return size


def _startup_log(log: Path, out: Path, scan_lines: int = 5000) -> int:
    """The first line of each (URL, model) among the head of ``log``: a log
    whose scan loads what a whole scan loads (the imports, each model's
    tokenizer) and replays almost nothing. Returns its line count."""
    import orjson

    seen: dict[tuple[str, str], bytes] = {}
    with open(log, "rb") as fh:
        for n, line in enumerate(fh):
            rec = orjson.loads(line)
            seen.setdefault((rec["url"], rec["body"].get("model", "")), line)
            if n >= scan_lines:
                break
    out.write_bytes(b"".join(seen.values()))
    return len(seen)


def _warm(path: Path) -> None:
    """Read ``path`` once, so that the timed run after it finds the log in
    the page cache: the figures are the scan's, not the disk's (a 1 GB log
    read from disk added 0.45 s of system time to a 10 s scan here)."""
    with open(path, "rb") as fh:
        while fh.read(1 << 23):
            pass


def _median_cpu(cmd: list[str], runs: int) -> float:
    return sorted(_run(cmd)[3] for _ in range(runs))[runs // 2]


def _one_partition(work: Path, target: int, seed: int) -> None:
    """One DeepSeek app's log, its first third and the whole scanned on one
    worker: CPU seconds, MB/s per core and peak RSS of each, and how the cost
    per MB grows (with this log's startup taken off: a scan of its first line)."""
    log, head = work / "one-app.jsonl", work / "one-app-third.jsonl"
    if not log.exists():
        synthetic.write_log(str(log), target, seed=seed, apps=3, provider="deepseek")
    if not head.exists():
        third = log.stat().st_size // 3
        with open(log, "rb") as src, open(head, "wb") as out:
            size = 0
            for line in src:
                if size + len(line) > third:
                    break
                out.write(line)
                size += len(line)
    first = work / "one-app-line.jsonl"
    with open(log, "rb") as src:
        first.write_bytes(src.readline())
    startup = _median_cpu([sys.executable, "-m", "fidelity", "scan", str(first), "--json", "--workers", "1"], 3)
    got = {}
    for f in (head, log):
        mb = f.stat().st_size / 1e6
        _warm(f)
        _, peak, out_, cpu = _run([sys.executable, "-m", "fidelity", "scan", str(f), "--json", "--workers", "1"])
        doc = json.loads(out_)
        got[f] = (cpu - startup) / mb
        print(json.dumps({"log": f.name, "workers": 1, "mb": round(mb, 1), "cpu_seconds": round(cpu, 2),
                          "mb_per_s_per_core": round(mb / cpu, 1), "requests": doc["totals"]["requests"],
                          "partitions": doc["totals"]["partitions"], "peak_rss_mib": round(peak)}), flush=True)
    print(json.dumps({"one partition, CPU per MB after startup, whole / first third": round(got[log] / got[head], 2),
                      "startup_cpu_seconds": round(startup, 2)}), flush=True)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--mb", type=float, default=1024, help="log size in MB (default 1024)")
    ap.add_argument("--diff-mb", type=float, default=20, help="sample for fidelity diff FOLDER (default 20)")
    ap.add_argument("--diff-runs", type=int, default=3,
                    help="runs of fidelity diff FOLDER; the median CPU time counts (default 3: one run moved by 25 %%)")
    ap.add_argument("--one-app-mb", type=float, default=None,
                    help="size of the one-partition log (default: --mb; 0 leaves it out)")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--workdir", help="keep the generated files here (default: a temporary folder)")
    args = ap.parse_args()
    work = Path(args.workdir or tempfile.mkdtemp(prefix="fidelity-bench-scan-"))
    work.mkdir(parents=True, exist_ok=True)
    target = int(args.mb * 1e6)
    mixed, append = work / "mixed.jsonl", work / "append-only.jsonl"
    t = time.perf_counter()
    if not mixed.exists():
        synthetic.write_log(str(mixed), target, seed=args.seed)
    if not append.exists():
        synthetic.write_log(str(append), target, seed=args.seed, append_only=True)
    print(f"generated {mixed.stat().st_size / 1e6:.0f} MB + {append.stat().st_size / 1e6:.0f} MB "
          f"in {time.perf_counter() - t:.0f} s", flush=True)
    # what a process pays before its first request: imports, vocabularies
    # (the median of three scans of one line per model; its own figure, so
    # that a log of another size can be estimated)
    heads = work / "startup.jsonl"
    n_heads = _startup_log(mixed, heads)
    startup = _median_cpu([sys.executable, "-m", "fidelity", "scan", str(heads), "--json", "--workers", "1"], 3)
    print(json.dumps({"scan startup": {"lines": n_heads, "cpu_seconds": round(startup, 2)}}), flush=True)
    rows = []
    for log in (mixed, append):
        mb = log.stat().st_size / 1e6
        for workers in (1, 2):
            _warm(log)
            wall, peak, out, cpu = _run([sys.executable, "-m", "fidelity", "scan", str(log), "--json",
                                    "--workers", str(workers)])
            doc = json.loads(out)
            rows.append({"log": log.name, "workers": workers, "mb": round(mb, 1), "seconds": round(wall, 2),
                         "cpu_seconds": round(cpu, 2), "mb_per_s_per_core": round(mb / cpu, 1),
                         "mb_per_s_per_core_after_startup": round(mb / (cpu - startup), 1),
                         "mb_per_s": round(mb / wall, 1),
                         "requests": doc["totals"]["requests"], "breaks": doc["totals"]["breaks"],
                         "peak_rss_mib": round(peak)})
            print(json.dumps(rows[-1]), flush=True)
    folder = work / "diff-folder"
    if not folder.exists():
        sample = _snapshots(mixed, folder, int(args.diff_mb * 1e6))
    else:
        sample = int(args.diff_mb * 1e6)
    runs = sorted((_run([sys.executable, "-m", "fidelity", "diff", str(folder), "--json"])
                   for _ in range(max(1, args.diff_runs))), key=lambda r: r[3])
    wall, peak, _, cpu = runs[len(runs) // 2]
    diff_rate = sample / 1e6 / cpu
    # the differ's own startup: the same command on the folder's first two files
    pair = work / "diff-pair"
    if not pair.exists():
        pair.mkdir()
        for f in sorted(folder.iterdir())[:2]:
            shutil.copy(f, pair / f.name)
    diff_startup = _median_cpu([sys.executable, "-m", "fidelity", "diff", str(pair), "--json"], 3)
    diff_after = sample / 1e6 / (cpu - diff_startup)
    print(json.dumps({"fidelity diff FOLDER": {"mb": round(sample / 1e6, 1), "seconds": round(wall, 2),
                                               "cpu_seconds": round(cpu, 2), "mb_per_s_per_core": round(diff_rate, 1),
                                               "startup_cpu_seconds": round(diff_startup, 2),
                                               "mb_per_s_per_core_after_startup": round(diff_after, 1),
                                               "runs_cpu_seconds": [round(r[3], 2) for r in runs]}}), flush=True)
    one_mb = args.mb if args.one_app_mb is None else args.one_app_mb
    if one_mb > 0:
        _one_partition(work, int(one_mb * 1e6), args.seed)
    first = {log: next(r for r in rows if r["log"] == log and r["workers"] == 1) for log in (mixed.name, append.name)}
    for what, key, diff in (("whole processes", "mb_per_s_per_core", diff_rate),
                            ("after startup", "mb_per_s_per_core_after_startup", diff_after)):
        scan_rate, append_rate = first[mixed.name][key], first[append.name][key]
        print(f"\n{what}: scan (mixed log, 1 worker) {scan_rate} MB/s per core = {scan_rate / diff:.0f}x "
              f"fidelity diff FOLDER ({diff:.1f} MB/s, the median of {len(runs)} runs); append-only sessions: "
              f"{append_rate} MB/s per core = {append_rate / diff:.0f}x")


if __name__ == "__main__":
    main()
