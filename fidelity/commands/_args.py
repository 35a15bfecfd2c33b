"""Argument types the commands share (argparse turns their errors into a
one-line usage error with exit code 2)."""

from __future__ import annotations

import argparse

__all__ = ["positive_int"]


def positive_int(text: str) -> int:
    """A whole number of at least 1 (``--jobs``, ``--workers``, ``--top``...)."""
    try:
        value = int(text)
    except ValueError:
        value = 0
    if value < 1:
        raise argparse.ArgumentTypeError(f"expected a whole number, 1 or more, got {text!r}")
    return value
