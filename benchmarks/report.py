"""Benchmark `fidelity report` (the README's first command) against the code before issue #34.

    python3 benchmarks/report.py [--runs 3] [--before d481aca]

Times, as whole processes started from outside, ``python3 -m fidelity report
--quiet`` on the bundled fixtures (480 rows: sessions x composition variants
x providers):

* **now**, on every core (the default ``--jobs``) and on one (``--jobs 1``);
* **before**: the same command (both ways) in a copy of the tree at ``--before`` (a git
  revision, default the last commit before this work: each body re-rendered,
  re-parsed and re-viewed per row, containers skipped by ``json``'s
  ``raw_decode`` per value, one process), extracted with ``git archive``.

The headline is CPU time, user + system of the process and every process it
started (the pool's workers included), the median of ``--runs`` runs
interleaved so that load on a shared machine hits both alike; wall clock is
printed beside it. The goal: at most 5 s of CPU. The ratio is before / now
(above 1: now is cheaper). The reports both write are compared byte for byte
(they must be identical).
"""

from __future__ import annotations

import argparse
import filecmp
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
#: the last commit before issue #34's work
BEFORE = "d481aca"
GOAL_CPU_S = 5.0
OUTPUTS = ("fidelity-report.md", "fidelity-report.json", "fidelity-report.html")


def _timed(tree: Path, out: Path, extra: list[str]) -> tuple[float, float]:
    """Wall and CPU seconds (user + system, children included) of one report."""
    # bytecode is written and read, as in an installed copy (pip compiles it on
    # install): an inherited PYTHONDONTWRITEBYTECODE would have every timed run
    # compile each module from source again, which no user's run does
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    env["PYTHONPATH"] = str(tree)
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    started = time.perf_counter()
    proc = subprocess.run([sys.executable, "-m", "fidelity", "report", "--quiet", "--out", str(out), *extra],
                          cwd=tree, env=env, capture_output=True)
    wall = time.perf_counter() - started
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if proc.returncode != 0:
        raise SystemExit(f"fidelity report failed in {tree}:\n{proc.stderr.decode()[-2000:]}")
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return wall, cpu


def _extract(rev: str, into: Path) -> None:
    archive = subprocess.run(["git", "-C", str(REPO), "archive", rev], capture_output=True, check=True).stdout
    subprocess.run(["tar", "-x", "-C", str(into)], input=archive, check=True)


def _takes_jobs(tree: Path) -> bool:
    """Whether the report command in ``tree`` has a ``--jobs`` option (its help says so)."""
    proc = subprocess.run([sys.executable, "-m", "fidelity", "report", "--help"], cwd=tree,
                          env={**os.environ, "PYTHONPATH": str(tree)}, capture_output=True, text=True)
    return "--jobs" in proc.stdout


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--before", default=BEFORE, help=f"git revision to compare with (default {BEFORE})")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory(prefix="fidelity-report-bench-") as tmp:
        old = Path(tmp) / "before"
        old.mkdir()
        _extract(args.before, old)
        cases = {
            "now (all cores)": (REPO, []),
            "now (--jobs 1)": (REPO, ["--jobs", "1"]),
            f"before ({args.before})": (old, []),
        }
        if _takes_jobs(old):  # the report had no --jobs before its workers came
            cases[f"before ({args.before}, --jobs 1)"] = (old, ["--jobs", "1"])
        outs = {name: Path(tmp) / f"out{k}" for k, name in enumerate(cases)}
        # warm the bytecode and the vocabulary copies once per tree, untimed
        for name, (tree, extra) in cases.items():
            _timed(tree, outs[name], extra)
        walls: dict[str, list[float]] = {name: [] for name in cases}
        cpus: dict[str, list[float]] = {name: [] for name in cases}
        for _ in range(args.runs):
            for name, (tree, extra) in cases.items():
                wall, cpu = _timed(tree, outs[name], extra)
                walls[name].append(wall)
                cpus[name].append(cpu)
        first = next(iter(outs.values()))
        same = all(filecmp.cmp(first / f, o / f, shallow=False) for o in outs.values() for f in OUTPUTS)
    before_cpu = statistics.median(cpus[f"before ({args.before})"])
    print(f"fidelity report on the bundled fixtures, median of {args.runs} runs, "
          f"{os.cpu_count()} cores, load {os.getloadavg()[0]:.1f}")
    print("| run | CPU (user + sys) | wall | CPU before / CPU |")
    print("|---|---|---|---|")
    for name in cases:
        cpu = statistics.median(cpus[name])
        print(f"| {name} | {cpu:.2f} s | {statistics.median(walls[name]):.2f} s | {before_cpu / cpu:.2f}x |")
    now_cpu = statistics.median(cpus["now (all cores)"])
    one_cpu = statistics.median(cpus["now (--jobs 1)"])
    met = now_cpu <= GOAL_CPU_S and one_cpu <= GOAL_CPU_S
    print(f"goal: at most {GOAL_CPU_S:.0f} s of CPU, on every core and with --jobs 1: {'met' if met else 'NOT met'} "
          f"({now_cpu:.2f} s, {one_cpu:.2f} s); reports byte-identical: {'yes' if same else 'NO'}")
    if not same:
        sys.exit(1)


if __name__ == "__main__":
    main()
