"""Benchmark `fidelity diff` against deepdiff and GNU cmp, timing like with like.

    python3 benchmarks/diff.py [--sizes 1,8,50] [--runs 3] [--peer-timeout 120]

For each size it builds an OpenAI Chat Completions parent body of about that
many megabytes and a child whose only change is late in the history (the
worst case for a prefix scan), writes both to files, and times in one run:

**In-process** (imports done and the vocabulary loaded before the clock
starts, best of ``--runs``, every memo cleared before each run):

* ``fidelity``: :func:`fidelity.diff.compare` on the two bodies (parse,
  cache views, first divergent byte, pointer, cause, tokens, cache model,
  cost);
* ``deepdiff``: ``json.loads`` of both bodies and ``DeepDiff`` of the two
  values (deepdiff compares values only: no bytes, tokens or cache).

**Whole process** (start to exit, timed from outside, median of ``--runs``;
bytecode and the vocabulary copy warm, as for an installed package):

* ``fidelity diff``: ``python3 -m fidelity diff PARENT CHILD``;
* ``deepdiff``: ``python3 -c`` that imports deepdiff, reads and parses both
  files and runs ``DeepDiff``;
* ``first divergence``: ``python3 -c`` that reads both files and runs
  :func:`fidelity.bytediff.first_divergence`, against ``cmp PARENT
  CHILD`` (GNU cmp: the same question, the first differing byte).

Each figure is printed twice: wall clock (what a user waits) and CPU time
(user + system, all threads; steadier when other work shares the machine,
but it counts the threads that tokenize in parallel as extra time).

Ratios are peer time / fidelity time (above 1: fidelity is faster). The goal
column is in-process deepdiff over the whole ``fidelity diff`` process (the
goal: 2x or more). A peer that runs past ``--peer-timeout`` is ``>limit``.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import NamedTuple

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from fidelity import tokens, wire
from fidelity.diff._compare import compare
from fidelity.model import Message, Request, Route, SystemBlock, Text, Tool, ToolCall, ToolResult

DEEPDIFF_PROCESS = ("import json, sys\nfrom deepdiff import DeepDiff\n"
                    "a = json.load(open(sys.argv[1], 'rb')); b = json.load(open(sys.argv[2], 'rb'))\n"
                    "DeepDiff(a, b)")
FIRST_PROCESS = ("import sys\nfrom fidelity.bytediff import first_divergence\n"
                 "print(first_divergence(open(sys.argv[1], 'rb').read(), open(sys.argv[2], 'rb').read()))")


def build(size_mb: float) -> tuple[bytes, bytes]:
    tools = tuple(Tool(f"tool_{i}", "Operates on the workspace. " * 10,
                       {"type": "object", "properties": {"path": {"type": "string"}}}) for i in range(20))
    chunk = "def handler(event):\n    return process(event)  # 处理事件\n" * 40
    messages: list[Message] = []
    i = 0
    while i * len(chunk.encode()) < size_mb * 1e6:
        messages.append(Message("user", (Text(f"Open file {i}."),)))
        messages.append(Message("assistant", (ToolCall(f"c{i}", "tool_0", {"path": f"f{i}.py"},
                                                       json.dumps({"path": f"f{i}.py"})),)))
        messages.append(Message("tool", (ToolResult(f"c{i}", "tool_0", chunk),)))
        i += 1
    parent = Request(Route("openai", "gpt-4o"), (SystemBlock("You are a coding agent."),), tools, tuple(messages))
    edited = list(messages)
    edited[-4] = Message("user", (Text(f"Open file {i - 2} again."),))
    child = Request(parent.route, parent.system, tools, tuple(edited))
    d = wire.get("openai-chat")
    return d.render(parent), d.render(child)


def clear_memos() -> None:
    """Forget every token id computed so far (the vocabulary stays loaded)."""
    tokens._segment_cache_clear()
    for name in tokens.names():
        tokens.get(name).cache_clear()


class Timing(NamedTuple):
    """Wall-clock seconds and CPU seconds (user + system, all threads); ``None``: past the limit."""

    wall: float | None
    cpu: float | None


def best_of(fn: Callable[[], object], runs: int, before: Callable[[], None] = lambda: None) -> Timing:
    walls, cpus = [], []
    for _ in range(runs):
        before()
        t, c = time.perf_counter(), time.process_time()
        fn()
        walls.append(time.perf_counter() - t)
        cpus.append(time.process_time() - c)
    return Timing(min(walls), min(cpus))


def _children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def process_median(cmd: list[str], env: dict[str, str], runs: int, timeout: float) -> Timing:
    walls, cpus = [], []
    for _ in range(runs):
        t, c = time.perf_counter(), _children_cpu()
        try:
            subprocess.run(cmd, env=env, cwd=REPO, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                           timeout=timeout, check=False)
        except subprocess.TimeoutExpired:
            return Timing(None, None)
        walls.append(time.perf_counter() - t)
        cpus.append(_children_cpu() - c)
    return Timing(statistics.median(walls), statistics.median(cpus))


def ms(seconds: float | None, limit: float) -> str:
    return f">{limit:.0f} s" if seconds is None else f"{seconds * 1000:,.0f} ms"


def ratio(peer: float | None, ours: float | None, limit: float) -> str:
    if ours is None:
        return "–"
    return f">{limit / ours:.0f}x" if peer is None else f"{peer / ours:.2f}x"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", default="1,8,50", help="body sizes in MB (default 1,8,50)")
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--peer-timeout", type=float, default=120.0)
    args = ap.parse_args()
    limit, runs, py = args.peer_timeout, args.runs, sys.executable
    from deepdiff import DeepDiff  # imported before any clock starts

    _ = tokens.for_model("gpt-4o").encoding  # the vocabulary, loaded before any in-process clock starts
    with tempfile.TemporaryDirectory() as tmp:
        env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
        env.update(PYTHONPATH=str(REPO), PYTHONPYCACHEPREFIX=str(Path(tmp, "pycache")))
        print(f"python {sys.version.split()[0]}, {os.cpu_count()} cpus, load {os.getloadavg()[0]:.1f}; "
              f"in-process: best of {runs}, memos cleared; whole process: median of {runs}")
        rows: list[tuple[str, dict[str, Timing]]] = []
        for size in (float(s) for s in args.sizes.split(",")):
            parent, child = build(size)
            pa, pb = Path(tmp, "parent.json"), Path(tmp, "child.json")
            pa.write_bytes(parent)
            pb.write_bytes(child)
            diff_cmd = [py, "-m", "fidelity", "diff", str(pa), str(pb)]
            subprocess.run(diff_cmd, env=env, cwd=REPO, capture_output=True, check=True)  # bytecode, vocab copy
            t: dict[str, Timing] = {
                "in_ours": best_of(lambda p=parent, c=child: compare(p, c), runs, clear_memos),
                "in_deep": best_of(lambda p=parent, c=child: DeepDiff(json.loads(p), json.loads(c)), runs),
                "pr_ours": process_median(diff_cmd, env, runs, limit),
                "pr_deep": process_median([py, "-c", DEEPDIFF_PROCESS, str(pa), str(pb)], env, runs, limit),
                "pr_first": process_median([py, "-c", FIRST_PROCESS, str(pa), str(pb)], env, runs, limit),
            }
            if shutil.which("cmp"):
                t["pr_cmp"] = process_median(["cmp", str(pa), str(pb)], env, runs, limit)
            rows.append((f"{len(parent) / 1e6:.1f} MB", t))
            print(f"measured {rows[-1][0]}", file=sys.stderr, flush=True)
        for kind in ("wall", "cpu"):
            print()
            print("wall clock (what a user waits)" if kind == "wall" else
                  "CPU time, user + system, all threads (steadier on a loaded machine)")
            print("| size | in-process: fidelity | deepdiff | deepdiff/fidelity "
                  "| whole process: fidelity diff | deepdiff | deepdiff/fidelity "
                  "| **goal: in-process deepdiff / whole fidelity diff** "
                  "| whole process: first divergence | GNU cmp | cmp/first divergence |")
            print("|---|---|---|---|---|---|---|---|---|---|---|")
            for label, t in rows:
                g = {k: getattr(v, kind) for k, v in t.items()}
                cmp_cells = (f"{ms(g['pr_cmp'], limit)} | {ratio(g['pr_cmp'], g['pr_first'], limit)}"
                             if "pr_cmp" in g else "no cmp | –")
                print(f"| {label} | {ms(g['in_ours'], limit)} | {ms(g['in_deep'], limit)} "
                      f"| {ratio(g['in_deep'], g['in_ours'], limit)} | {ms(g['pr_ours'], limit)} "
                      f"| {ms(g['pr_deep'], limit)} | {ratio(g['pr_deep'], g['pr_ours'], limit)} "
                      f"| **{ratio(g['in_deep'], g['pr_ours'], limit)}** | {ms(g['pr_first'], limit)} | {cmp_cells} |")


if __name__ == "__main__":
    main()
