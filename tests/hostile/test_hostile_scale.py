"""Scale without surprise, at CI size (a few MB; benchmarks/scale.py measures
200 MB bodies and 10,000 snapshots): peak traced memory of a diff stays a
small multiple of its input, and a snapshot folder is streamed (memory does
not grow with the number of files; only a few bodies are held at once)."""

from __future__ import annotations

import json
import random
import tracemalloc
from pathlib import Path

from fidelity import tokens
from fidelity.capture import snapshot
from fidelity.diff import compare

WORDS = "alpha beta gamma delta file src def return import the cache prefix token".split()


def _pair(mb: float) -> tuple[bytes, bytes]:
    rng = random.Random(1)
    msgs = [{"role": "system", "content": "You are a coding agent."}]
    while sum(len(m["content"]) for m in msgs) < mb * 1_000_000:
        msgs.append({"role": "user", "content": " ".join(rng.choice(WORDS) for _ in range(2000))})
    half = len(msgs) // 2
    child = msgs[:half] + [{"role": "user", "content": "CHANGED"}] + msgs[half:]
    dump = lambda m: json.dumps({"model": "gpt-4o", "messages": m}, separators=(",", ":")).encode()  # noqa: E731
    return dump(msgs), dump(child)


def test_diff_peak_memory_is_a_small_multiple_of_the_input() -> None:
    parent, child = _pair(3)
    tokens._segment_cache_clear()
    # The vocabulary is a fixed cost, not a multiple of the input: load it first.
    tokens.get("o200k_base").ids("warm")
    tracemalloc.start()
    try:
        result = compare(parent, child)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert result.raw.first_divergent_byte is not None and result.tokens.common_prefix > 0
    # measured 10.5x with the one builder (7.8x before it: the process-wide builder keeps each
    # element's ids for reuse beside the flat prompts; the parse of a 3 MB body peaks at 6.5x
    # its size on its own), the vocabulary loaded before the window
    assert peak < 12 * (len(parent) + len(child)), peak / (len(parent) + len(child))


def test_segment_memo_is_bounded_by_bytes(monkeypatch) -> None:  # type: ignore[no-untyped-def]
    monkeypatch.setattr(tokens, "MEMO_BYTES", 1_000_000)
    tokens._segment_cache_clear()
    parent, child = _pair(2)
    # the per-segment memo serves the dialects without billed framing (OpenAI
    # bodies are framed piece by piece, each distinct piece encoded once a call)
    compare(parent, child, dialect="vllm")
    assert tokens._MEMO_SIZE <= 1_000_000
    assert len(tokens._MEMO) > 0  # still memoising small segments


def _folder(tmp: Path, count: int) -> Path:
    rng = random.Random(2)
    msgs = [{"role": "system", "content": "sys"}]
    for seq in range(1, count + 1):
        msgs.append({"role": "user", "content": " ".join(rng.choice(WORDS) for _ in range(300))})
        msgs = [msgs[0], *msgs[-20:]]
        body = json.dumps({"model": "gpt-4o", "messages": msgs}, separators=(",", ":")).encode()
        snapshot.write(tmp, snapshot.Snapshot(body=body, seq=seq, provider="openai-chat", model="gpt-4o"))
    return tmp


def test_snapshot_folder_is_streamed(tmp_path: Path, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    folder = _folder(tmp_path, 120)
    total = sum(p.stat().st_size for p in folder.iterdir())
    reads: list[str] = []
    real = snapshot.load_body

    def spy(p):  # type: ignore[no-untyped-def]
        reads.append(Path(p).name)
        return real(p)

    monkeypatch.setattr(snapshot, "load_body", spy)
    assert snapshot.count_pairs(folder) == 119
    tracemalloc.start()
    try:
        held = n = 0
        for _pair in snapshot.pairs_in_folder(folder):
            n += 1
            held = max(held, tracemalloc.get_traced_memory()[0])
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert n == 119
    assert len(reads) == 120  # each body read once, in order
    assert peak < total / 4  # never the whole folder in memory


def test_folder_diff_shows_a_progress_bar_on_a_terminal(tmp_path: Path, monkeypatch, capsys) -> None:  # type: ignore[no-untyped-def]
    import argparse

    from fidelity.commands import diff as diff_cmd

    folder = _folder(tmp_path, 5)
    seen: dict[str, object] = {}

    def fake_track(seq, total=None, description="", console=None, transient=False):  # type: ignore[no-untyped-def]
        seen.update(total=total, description=description, stderr=console.stderr if console else None)
        yield from seq

    import rich.progress

    monkeypatch.setattr(rich.progress, "track", fake_track)
    monkeypatch.setattr("rich.console.Console.is_terminal", property(lambda self: True))
    args = argparse.Namespace(parent=str(folder), child=None, provider=None, model=None, prices=None, json=True,
                              endpoint=None, at=None)
    assert diff_cmd.run(args) == 0
    assert seen == {"total": 4, "description": "diffing pairs", "stderr": True}
    assert len(json.loads(capsys.readouterr().out)) == 4
