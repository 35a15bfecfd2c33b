"""``fidelity scan``: one JSON option (``--json``, as diff, replay and
tokens-check spell it; ``--format json`` is a deprecated alias), and a note
for a model without a price that names whole models, never a cut word."""

from __future__ import annotations

import contextlib
import io
import re
from pathlib import Path

import orjson
import pytest

from fidelity import pricing
from fidelity.cli import main
from fidelity.scan import scan

URL = "https://dashscope.aliyuncs.com/compatible-mode/v1/chat/completions"


def _log(path: Path, model: str) -> Path:
    system = " ".join(f"rule {i}: answer briefly." for i in range(300))
    lines = []
    for turns in (1, 2):
        messages = [{"role": "system", "content": system}]
        for i in range(turns):
            messages += [{"role": "user", "content": f"q{i}"}, {"role": "assistant", "content": f"a{i}"}]
        messages.append({"role": "user", "content": "next"})
        lines.append(orjson.dumps({"time": f"2026-12-01T10:0{turns}:00Z", "url": URL, "session": "s",
                                   "body": {"model": model, "messages": messages}}))
    path.write_bytes(b"\n".join(lines) + b"\n")
    return path


def _cli(argv: list[str]) -> tuple[int, bytes, str]:
    raw, err = io.BytesIO(), io.StringIO()
    out = io.TextIOWrapper(raw, encoding="utf-8")
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        rc = main(argv)
    out.flush()
    return rc, raw.getvalue(), err.getvalue()


def test_format_json_is_a_deprecated_alias_of_json(tmp_path: Path) -> None:
    log = _log(tmp_path / "log.jsonl", "qwen-plus")
    rc, by_flag, err = _cli(["scan", str(log), "--json", "--workers", "1"])
    assert rc == 0 and err == ""
    rc, by_format, err = _cli(["scan", str(log), "--format", "json", "--workers", "1"])
    assert rc == 0 and by_format == by_flag
    assert err == "fidelity scan: --format json is deprecated; use --json\n"
    rc, _, err = _cli(["scan", str(log), "--json", "--format", "md", "--workers", "1"])
    assert rc == 2 and "--json and --format md: choose one view" in err and err.count("\n") == 1


def _whole_names(note: str, table: pricing.PriceTable, provider: str) -> list[str]:
    m = re.search(r"models: (.*?)(?: and \d+ more)?; pass --prices", note)
    assert m, note
    names = m.group(1).split(", ")
    known = {x.split("/", 1)[1] for x in table.models(provider)}
    assert names and set(names) <= known, (names, known)
    return names


def test_the_no_price_note_of_a_scan_names_whole_models(tmp_path: Path) -> None:
    table = pricing.load()
    res = scan([_log(tmp_path / "log.jsonl", "qwen3-coder-plus-unpriced")], workers=1)
    (note,) = [n for n in res["notes"] if n.startswith("no price for")]
    assert note.startswith("no price for dashscope/qwen3-coder-plus-unpriced in ") and note.endswith("to price it")
    _whole_names(note, table, "dashscope")


@pytest.mark.parametrize("provider", ["openai", "anthropic", "dashscope", "deepseek", "gemini"])
def test_no_price_note_lists_whole_names_and_counts_the_rest(provider: str) -> None:
    table = pricing.load()
    note = pricing.no_price_note(table, provider, "model-nobody-sells")
    names = _whole_names(note, table, provider)
    rest = len(table.models(provider)) - len(names)
    assert (f" and {rest} more;" in note) is (rest > 0)
