"""Texts to hold a tokenizer to (the DeepSeek encoder's tests and benchmark):
every string of recorded files, and the message texts of a request log."""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

__all__ = ["strings", "recorded_texts", "log_message_texts"]

#: files read as text: JSON and JSONL values one by one, the others whole
SUFFIXES = (".json", ".jsonl", ".md", ".txt", ".yaml", ".yml")


def strings(value: Any) -> Iterator[str]:
    """Every string in a parsed JSON value (dict keys left out)."""
    if isinstance(value, str):
        yield value
    elif isinstance(value, (dict, list)):
        for v in value.values() if isinstance(value, dict) else value:
            yield from strings(v)


def recorded_texts(root: Path) -> list[str]:
    """Each distinct string of the files under ``root``, in path order: the
    values of JSON files and of each JSONL line (a line that is not JSON,
    whole), Markdown, text and YAML files whole."""
    out: dict[str, None] = {}
    for path in sorted(root.rglob("*")):
        if not path.is_file() or path.suffix not in SUFFIXES:
            continue
        raw = path.read_text(encoding="utf-8", errors="replace")
        if path.suffix not in (".json", ".jsonl"):
            out[raw] = None
            continue
        for chunk in raw.splitlines() if path.suffix == ".jsonl" else [raw]:
            try:
                out.update(dict.fromkeys(strings(json.loads(chunk))))
            except ValueError:
                out[chunk] = None
    return list(out)


def log_message_texts(lines: Iterable[str | bytes], url_part: str, limit_bytes: int) -> list[str]:
    """Each distinct string in the messages of the request-log lines whose
    URL contains ``url_part``, until about ``limit_bytes`` of UTF-8."""
    out: dict[str, None] = {}
    size = 0
    for line in lines:
        try:
            row = json.loads(line)
        except ValueError:
            continue
        body = row.get("body") if isinstance(row, dict) and url_part in str(row.get("url", "")) else None
        messages = body.get("messages") if isinstance(body, dict) else None
        for message in messages if isinstance(messages, list) else []:
            for text in strings(message.get("content") if isinstance(message, dict) else None):
                if text not in out:
                    out[text] = None
                    size += len(text.encode("utf-8", "replace"))
        if size >= limit_bytes:
            break
    return list(out)
