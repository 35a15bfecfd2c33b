"""Benchmark `fidelity diff` against deepdiff, difflib and GNU cmp.

    python3 benchmarks/diff.py [--sizes 1,10,50] [--peer-timeout 60]

For each size it builds an OpenAI Chat Completions parent body of about that
many megabytes and a child whose only change is late in the history (the
worst case for a prefix scan), then times in one run:

* ``fidelity first divergence``: :func:`fidelity.bytediff.first_divergence`
  on the raw bodies, against GNU ``cmp`` on the same two files (throughput);
* ``fidelity diff``: the whole comparison (cache view, pointer, cause,
  tokens, cache model, cost), against ``deepdiff.DeepDiff`` on the parsed
  bodies and ``difflib.SequenceMatcher`` on the raw bytes, the two peers an
  engineer would otherwise reach for. Peers run in a subprocess with a time
  limit; a peer that hits it is reported as ``>limit``.

Ratios are peer time / fidelity time (above 1: fidelity is faster).
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

from fidelity import wire
from fidelity.diff.bytediff import first_divergence
from fidelity.diff._compare import compare
from fidelity.model import Message, Request, Route, SystemBlock, Text, Tool, ToolCall, ToolResult


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


def timed(fn, repeat: int = 3) -> float:
    best = float("inf")
    for _ in range(repeat):
        t = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - t)
    return best


def peer(code: str, a: Path, b: Path, timeout: float) -> float | None:
    """Run a peer in a fresh interpreter; returns its own timing or None on timeout."""
    script = f"import sys,time,json\na=open(sys.argv[1],'rb').read();b=open(sys.argv[2],'rb').read()\n" \
             f"t=time.perf_counter()\n{code}\nprint(time.perf_counter()-t)"
    try:
        out = subprocess.run([sys.executable, "-c", script, str(a), str(b)], capture_output=True,
                             text=True, timeout=timeout, check=True)
    except subprocess.TimeoutExpired:
        return None
    return float(out.stdout.strip().splitlines()[-1])


def cmp_time(a: Path, b: Path) -> float | None:
    if not shutil.which("cmp"):
        return None
    t = time.perf_counter()
    subprocess.run(["cmp", str(a), str(b)], capture_output=True)
    return time.perf_counter() - t


def fmt(seconds: float | None, limit: float) -> str:
    return f">{limit:.0f}s" if seconds is None else f"{seconds * 1000:.1f} ms"


def ratio(peer_s: float | None, ours: float, limit: float) -> str:
    return f">{limit / ours:.0f}x" if peer_s is None else f"{peer_s / ours:.1f}x"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", default="1,10,50", help="body sizes in MB (default 1,10,50)")
    ap.add_argument("--peer-timeout", type=float, default=60.0)
    args = ap.parse_args()
    limit = args.peer_timeout
    print(f"python {sys.version.split()[0]}, {os.cpu_count()} cpus; peer time limit {limit:.0f}s")
    print("| size | first divergence | GNU cmp | cmp/fidelity | fidelity diff | deepdiff | deepdiff/fidelity "
          "| difflib | difflib/fidelity |")
    print("|---|---|---|---|---|---|---|---|---|")
    with tempfile.TemporaryDirectory() as tmp:
        for size in (float(s) for s in args.sizes.split(",")):
            parent, child = build(size)
            pa, pb = Path(tmp, "p.json"), Path(tmp, "c.json")
            pa.write_bytes(parent)
            pb.write_bytes(child)
            at = first_divergence(parent, child)
            assert at is not None and at > len(parent) * 0.9
            t_first = timed(lambda: first_divergence(parent, child), 5)
            t_cmp = cmp_time(pa, pb)
            t_diff = timed(lambda: compare(parent, child), 1)
            t_deep = peer("from deepdiff import DeepDiff\nDeepDiff(json.loads(a), json.loads(b))", pa, pb, limit)
            t_dl = peer("import difflib\nm=difflib.SequenceMatcher(None,a,b,autojunk=False)\nm.get_matching_blocks()",
                        pa, pb, limit)
            mb = len(parent) / 1e6
            print(f"| {mb:.1f} MB | {fmt(t_first, limit)} ({mb / 1000 / t_first:.1f} GB/s) | {fmt(t_cmp, limit)} "
                  f"| {ratio(t_cmp, t_first, limit)} | {fmt(t_diff, limit)} | {fmt(t_deep, limit)} "
                  f"| {ratio(t_deep, t_diff, limit)} | {fmt(t_dl, limit)} | {ratio(t_dl, t_diff, limit)} |",
                  flush=True)


if __name__ == "__main__":
    main()
