"""Views of one :class:`fidelity.score.Score`: JSON, Markdown, HTML and a
rich console table. Every view renders the same result object; none computes
a figure of its own (derived values come from :mod:`._data`)."""

from __future__ import annotations

from pathlib import Path

from ..formats import json_doc
from ..jsonio import atomic_write
from ..score import Score
from ._data import SCHEMA, to_json
from .console_view import console_table
from .html_view import render_html
from .markdown_view import render_markdown

__all__ = ["SCHEMA", "to_json", "render_markdown", "render_html", "console_table", "write", "FILES"]

FILES = ("fidelity-report.md", "fidelity-report.json", "fidelity-report.html")


def write(score: Score, out_dir: str | Path) -> list[str]:
    """Write the three report files atomically into ``out_dir``; returns
    their paths as given (relative stays relative)."""
    out = Path(out_dir)
    data = to_json(score)
    views = (render_markdown(data).encode("utf-8"), json_doc(data), render_html(data).encode("utf-8"))
    for name, body in zip(FILES, views):
        atomic_write(out / name, body)
    return [str(out / name) for name in FILES]
