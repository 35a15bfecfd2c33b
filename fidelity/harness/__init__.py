"""Real agent harnesses, release by release: install one (:mod:`.install`),
drive it headless through ``fidelity proxy`` against the scripted upstream
(:mod:`.drive`, :mod:`.capture`), judge each subagent child against its
parent (:mod:`.judge`), and build the matrix (:mod:`.matrix`, :mod:`.bisect`)
from one TOML descriptor per harness (:mod:`.descriptor`). Driving needs the
``proxy`` extra (aiohttp); reading captures does not. docs/harness.md."""

from __future__ import annotations

from .bisect import first_change
from .descriptor import Descriptor, Kind, load, load_all, names
from .judge import PROVIDERS, Finding, judge

__all__ = ["Descriptor", "Kind", "load", "load_all", "names", "Finding", "judge", "PROVIDERS", "first_change"]
