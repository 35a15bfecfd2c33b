"""How long a user waits for `fidelity diff` on two small bodies.

    python3 benchmarks/startup.py [--runs 9] [--kb 10]

Every figure is a whole process (start, imports, work, exit), timed from
outside, median of ``--runs`` runs interleaved so that load on the machine
hits all of them alike:

* ``python3 -c pass``: the interpreter alone (the floor);
* tokenizer load: building the tokenizer the bodies need (``o200k_base``
  for ``gpt-4o``), timed inside a fresh process around
  ``tokens.for_model(...).encoding`` (after importing ``fidelity.tokens``);
* ``fidelity diff``: ``python3 -m fidelity diff PARENT CHILD`` on an OpenAI
  Chat Completions parent of about ``--kb`` KB and a child whose last user
  message differs, printed to a pipe.

Each is printed as wall clock and as CPU time (user + system; steadier when
other work shares the machine). The goal is ``fidelity diff`` within 2x of ``python3 -c pass`` plus the
tokenizer load. Both are printed with the vocabulary copy warm (the usual
case) and turned off (``FIDELITY_CACHE_DIR=off``, a first run ever). Python
bytecode is cached (in a temporary ``PYTHONPYCACHEPREFIX``), as for an
installed package, even where ``PYTHONDONTWRITEBYTECODE`` is set.
"""

from __future__ import annotations

import argparse
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from fidelity import wire
from fidelity.model import Message, Request, Route, SystemBlock, Text

LOAD = ("import time, sys; from fidelity import tokens; t, c = time.perf_counter(), time.process_time(); "
        "tokens.for_model('gpt-4o').encoding; print(time.perf_counter() - t, time.process_time() - c)")


def bodies(kb: float) -> tuple[bytes, bytes]:
    """A parent of about ``kb`` KB and a child that edits its last user message."""
    messages: list[Message] = []
    i = 0
    while sum(len(m.parts[0].text) for m in messages) < kb * 1000 - 1600:  # type: ignore[union-attr]
        role = "user" if i % 2 == 0 else "assistant"
        messages.append(Message(role, (Text(f"Turn {i}: please look at module_{i}.py and report. " * 4),)))
        i += 1
    messages.append(Message("user", (Text("Now summarise."),)))
    parent = Request(Route("openai", "gpt-4o"), (SystemBlock("You are a careful coding agent."),), (),
                     tuple(messages))
    child = Request(parent.route, parent.system, (), tuple(messages[:-1]) +
                    (Message("user", (Text("Now summarise, briefly."),)),))
    d = wire.get("openai-chat")
    return d.render(parent), d.render(child)


def _children_cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def whole(cmd: list[str], env: dict[str, str]) -> tuple[float, float]:
    """Wall-clock and CPU seconds (user + system) of a whole process."""
    t, c = time.perf_counter(), _children_cpu()
    subprocess.run(cmd, env=env, cwd=REPO, capture_output=True, check=True)
    return time.perf_counter() - t, _children_cpu() - c


def inner(cmd: list[str], env: dict[str, str]) -> tuple[float, float]:
    """Wall-clock and CPU seconds the process measured itself."""
    out = subprocess.run(cmd, env=env, cwd=REPO, capture_output=True, text=True, check=True).stdout
    wall_s, cpu_s = out.strip().splitlines()[-1].split()
    return float(wall_s), float(cpu_s)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=9)
    ap.add_argument("--kb", type=float, default=10.0)
    args = ap.parse_args()
    py = sys.executable
    with tempfile.TemporaryDirectory() as tmp:
        # Bytecode cached as an installed package has it (pip compiles on
        # install), kept out of the repository; a warm-up run writes it.
        base_env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
        base_env.update(PYTHONPATH=str(REPO), PYTHONPYCACHEPREFIX=str(Path(tmp, "pycache")))
        parent, child = bodies(args.kb)
        pa, pb = Path(tmp, "parent.json"), Path(tmp, "child.json")
        pa.write_bytes(parent)
        pb.write_bytes(child)
        print(f"python {sys.version.split()[0]}, {os.cpu_count()} cpus, {os.getloadavg()[0]:.1f} load; "
              f"bodies {len(parent) / 1000:.1f} KB / {len(child) / 1000:.1f} KB; median of {args.runs} runs, "
              "whole processes")
        print("| vocabulary copy | clock | python3 -c pass | tokenizer load | budget 2x(pass+load) "
              "| fidelity diff | diff / (pass+load) |")
        print("|---|---|---|---|---|---|---|")
        for label, cache in (("warm", str(Path(tmp, "cache"))), ("off (first run)", "off")):
            env = {**base_env, "FIDELITY_CACHE_DIR": cache}
            for warm_up in ([py, "-c", LOAD], [py, "-m", "fidelity", "diff", str(pa), str(pb)]):
                subprocess.run(warm_up, env=env, cwd=REPO, capture_output=True, check=True)  # copy, bytecode
            runs: dict[str, list[tuple[float, float]]] = {"pass": [], "load": [], "diff": []}
            for _ in range(args.runs):
                runs["pass"].append(whole([py, "-c", "pass"], env))
                runs["load"].append(inner([py, "-c", LOAD], env))
                runs["diff"].append(whole([py, "-m", "fidelity", "diff", str(pa), str(pb)], env))
            for k, clock in ((0, "wall"), (1, "CPU")):
                m = {name: statistics.median(r[k] for r in v) for name, v in runs.items()}
                floor = m["pass"] + m["load"]
                print(f"| {label} | {clock} | {m['pass'] * 1000:.0f} ms | {m['load'] * 1000:.0f} ms "
                      f"| {2 * floor * 1000:.0f} ms | {m['diff'] * 1000:.0f} ms | **{m['diff'] / floor:.2f}x** |",
                      flush=True)


if __name__ == "__main__":
    main()
