"""What the commands share: argument types (argparse turns their errors into a
one-line usage error with exit code 2) and the check for the proxy extra."""

from __future__ import annotations

import argparse

from ..errors import FidelityError

__all__ = ["positive_int", "require_aiohttp"]


def positive_int(text: str) -> int:
    """A whole number of at least 1 (``--jobs``, ``--workers``, ``--top``...)."""
    try:
        value = int(text)
    except ValueError:
        value = 0
    if value < 1:
        raise argparse.ArgumentTypeError(f"expected a whole number, 1 or more, got {text!r}")
    return value


def require_aiohttp(command: str) -> None:
    """A one-line error naming the extra to install when aiohttp is missing."""
    try:
        import aiohttp  # noqa: F401
    except ImportError:
        raise FidelityError(f"fidelity {command} needs aiohttp: pip install 'fidelity[proxy]'") from None
