"""How every view writes a number or escapes a string: counts, dollars,
percents, Markdown table cells and GitHub workflow-command values, written
once so that the console, Markdown, HTML, annotation and JUnit views of
every command agree. Locale-free and deterministic; ``missing`` is what an
unknown value (``None``) prints as, never a zero."""

from __future__ import annotations

__all__ = ["count", "usd", "percent", "md_cell", "gh_data", "gh_property"]


def count(n: int | None, missing: str = "–") -> str:
    """``12,345``."""
    return missing if n is None else f"{n:,}"


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
