"""Scale without surprise: peak memory and time of ``fidelity diff`` on two
large bodies, and of a folder of many snapshots.

    python3 benchmarks/scale.py diff --mb 200        # two 200 MB bodies
    python3 benchmarks/scale.py folder --count 10000  # 10,000 snapshots

Each measurement runs the real CLI (``python3 -m fidelity ...``) in a child
process and reads its peak resident set size (``ru_maxrss`` of the child), so
the figures include the interpreter, imports and tokenizer vocabularies.
Inputs are generated under a temporary folder (or ``--dir``) and deleted.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import subprocess
import sys
import tempfile
import time
from pathlib import Path

WORDS = ("alpha beta gamma delta file src def return import the cache prefix token "
         "tool schema request parent child fork").split()


def _message(rng: random.Random, i: int, words: int = 2000) -> dict[str, str]:
    return {"role": "user" if i % 2 == 0 else "assistant",
            "content": " ".join(rng.choice(WORDS) for _ in range(words))}


def make_pair(folder: Path, mb: int) -> tuple[Path, Path]:
    """A parent body of about ``mb`` MB and a child that inserts one message
    in the middle (so the differ must walk half of each body)."""
    rng = random.Random(1)
    msgs = [{"role": "system", "content": "You are a coding agent."}]
    size, i = 0, 0
    while size < mb * 1_000_000:
        m = _message(rng, i)
        msgs.append(m)
        size += len(m["content"]) + 40
        i += 1
    half = len(msgs) // 2
    parent = {"model": "gpt-4o", "messages": msgs}
    child = {"model": "gpt-4o", "messages": msgs[:half] + [{"role": "user", "content": "CHANGED"}] + msgs[half:]}
    p, c = folder / "parent.json", folder / "child.json"
    p.write_text(json.dumps(parent, separators=(",", ":")))
    c.write_text(json.dumps(child, separators=(",", ":")))
    return p, c


def make_folder(folder: Path, count: int) -> Path:
    """``count`` snapshots of one growing conversation (each request appends
    a turn to the one before), written as the capture writes them."""
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
    from fidelity.capture import snapshot

    rng = random.Random(2)
    out = folder / "snaps"
    out.mkdir()
    msgs = [{"role": "system", "content": "You are a coding agent."}]
    for seq in range(1, count + 1):
        msgs.append(_message(rng, seq, words=40))
        if len(msgs) > 60:  # a sliding window keeps each body a few KB
            msgs = [msgs[0], *msgs[-40:]]
        body = json.dumps({"model": "gpt-4o", "messages": msgs}, separators=(",", ":")).encode()
        snapshot.write(out, snapshot.Snapshot(body=body, seq=seq, provider="openai-chat", family="openai",
                                              model="gpt-4o"))
    return out


def measure(argv: list[str]) -> tuple[float, float, int]:
    """(seconds, peak RSS MB, exit code) of ``python3 -m fidelity argv``."""
    start = time.perf_counter()
    with tempfile.TemporaryFile() as err:
        proc = subprocess.Popen([sys.executable, "-m", "fidelity", *argv], stdout=subprocess.DEVNULL,
                                stderr=err, cwd=Path(__file__).resolve().parent.parent)
        _pid, status, usage = os.wait4(proc.pid, 0)  # this child's own peak, not every child's
        seconds = time.perf_counter() - start
        rc = os.waitstatus_to_exitcode(status)
        proc.returncode = rc
        if rc != 0:
            err.seek(0)
            print(err.read().decode(errors="replace")[-2000:], file=sys.stderr)
    return seconds, usage.ru_maxrss / 1024, rc  # ru_maxrss is in KB on Linux


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("what", choices=("diff", "folder"))
    ap.add_argument("--mb", type=int, default=200, help="size of each body for `diff` (MB)")
    ap.add_argument("--count", type=int, default=10_000, help="snapshots in the folder")
    ap.add_argument("--dir", help="where to generate inputs (default: a temporary folder)")
    args = ap.parse_args()
    with tempfile.TemporaryDirectory(dir=args.dir) as tmp:
        folder = Path(tmp)
        if args.what == "diff":
            p, c = make_pair(folder, args.mb)
            total = (p.stat().st_size + c.stat().st_size) / 1e6
            seconds, peak, rc = measure(["diff", str(p), str(c), "--json"])
            print(f"fidelity diff: 2 bodies of {p.stat().st_size / 1e6:.0f} MB ({total:.0f} MB in all): "
                  f"exit {rc}, {seconds:.1f} s, peak RSS {peak:.0f} MB = {peak / total:.1f}x the input")
        else:
            start = time.perf_counter()
            snaps = make_folder(folder, args.count)
            made = time.perf_counter() - start
            size = sum(p.stat().st_size for p in snaps.iterdir()) / 1e6
            seconds, peak, rc = measure(["diff", str(snaps), "--json"])
            print(f"fidelity diff FOLDER: {args.count:,} snapshots ({size:.0f} MB, generated in {made:.0f} s): "
                  f"exit {rc}, {seconds:.1f} s ({args.count / seconds:.0f} pairs/s), peak RSS {peak:.0f} MB")
    return 0


if __name__ == "__main__":
    sys.exit(main())
