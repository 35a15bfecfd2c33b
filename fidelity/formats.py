"""How every view writes a number, escapes a string or serialises a result
(counts, dollars, percents, Markdown cells, GitHub workflow-command values,
the ``--json`` document), written once so that all views agree. Locale-free;
an unknown value (``None``) prints as ``missing``, never a zero. HTML and
JUnit XML use :func:`html.escape` and :mod:`xml.etree.ElementTree`."""

from __future__ import annotations

import json
from typing import Any

import orjson

__all__ = ["count", "usd", "percent", "md_cell", "gh_data", "gh_property", "json_doc", "printable"]


def count(n: float | None, missing: str = "–") -> str:
    """``12,345``; a float (a mean per fork) rounds half to even: ``2.5`` → ``2``."""
    if n is None:
        return missing
    return f"{n:,}" if isinstance(n, int) else f"{n:,.0f}"


def usd(x: float | None, places: int = 4, missing: str = "–") -> str:
    """``$1,234.5678``; ``-$0.0100`` for a negative amount (a saving)."""
    if x is None:
        return missing
    sign = "-" if x < 0 else ""
    return f"{sign}${abs(x):,.{places}f}"


def percent(fraction: float | None, places: int = 1, missing: str = "–") -> str:
    """``12.5%`` for ``0.125``."""
    return missing if fraction is None else f"{fraction * 100:.{places}f}%"


def md_cell(text: str) -> str:
    """Text that stays in one Markdown table cell (pipes escaped, one line)."""
    return text.replace("|", "\\|").replace("\r", " ").replace("\n", " ")


def gh_data(text: str) -> str:
    """A GitHub workflow command's message (``::error ...::MESSAGE``):
    ``%``, CR and LF escaped as the runner expects
    (https://docs.github.com/en/actions/reference/workflows-and-actions/workflow-commands)."""
    return text.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def gh_property(text: str) -> str:
    """A workflow command's property value (``file=...,title=...``): also ``:`` and ``,``."""
    return gh_data(text).replace(":", "%3A").replace(",", "%2C")


def json_doc(doc: Any) -> bytes:
    """A result's JSON document as every ``--json`` output and JSON file has
    it: two-space indent, keys in insertion order, a final newline; ASCII-escaped
    throughout when a string holds a lone surrogate (not UTF-8)."""
    try:
        return orjson.dumps(doc, option=orjson.OPT_INDENT_2) + b"\n"
    except TypeError:
        return json.dumps(doc, indent=2, ensure_ascii=True).encode("ascii") + b"\n"


def printable(text: str) -> str:
    """``text`` as a console can write it: a lone surrogate (a ``"\\ud800"``
    escape read from a body) is shown escaped instead of failing to encode."""
    return text.encode("utf-8", "backslashreplace").decode("utf-8")
