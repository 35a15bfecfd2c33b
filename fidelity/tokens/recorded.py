"""Recorded model requests paired with the usage the provider returned.

``fidelity tokens-check`` compares fidelity's prompt-token prediction with
what the provider billed; the pairs are the exchanges of the one reader of
recordings (:mod:`fidelity.traffic.sources`: vcrpy and Ruby VCR cassettes,
HAR, claude-trace, snapshot folders, including the proxy's), each with the
decision of the one "set apart" rule (:mod:`fidelity.traffic.apart`), so
``tokens-check`` scores exactly the requests ``replay`` scores.

DeepSeek Harness logs are read by :mod:`fidelity.calibrate` (their requests
are rebuilt, not recorded).
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

from ..traffic.exchange import Exchange
from ..traffic.sources import read_all

__all__ = ["RecordedRequest", "iter_recorded"]

#: one recorded request (``source``, ``where``, ``url``, ``body``, ``usage``, the decision)
RecordedRequest = Exchange


def iter_recorded(folder: str | Path) -> Iterator[Exchange]:
    """Every request with a reported prompt under ``folder`` (a file or a
    folder searched recursively, in sorted path order), set apart or not."""
    for recording in read_all(folder):
        for ex in recording:
            if ex.usage is not None and isinstance(ex.usage.get("prompt"), int):
                yield ex
