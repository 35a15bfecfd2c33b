"""Capture any harness through HTTP: a recording reverse proxy
(:class:`RecordingProxy`, ``fidelity proxy``) and a scripted fake provider
(:class:`ScriptedUpstream`, ``fidelity upstream``); :mod:`.parent` is their
seam to the cache simulator. Needs the ``proxy`` extra (aiohttp). docs/proxy.md.

The names below are imported when first used, so that a command reading only
:mod:`.harness_rows` or :mod:`._store` (``fidelity report``) does not load
the servers (asyncio, the HTTP client)."""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .parent import ParentIndex, Verdict, judge
    from .script import Script, load_script, parse_script
    from .server import RecordingProxy, serve
    from .upstream import ScriptedUpstream

__all__ = ["RecordingProxy", "serve", "ScriptedUpstream", "Script", "load_script", "parse_script",
           "ParentIndex", "Verdict", "judge"]

_HOME = {"ParentIndex": "parent", "Verdict": "parent", "judge": "parent", "Script": "script",
         "load_script": "script", "parse_script": "script", "RecordingProxy": "server", "serve": "server",
         "ScriptedUpstream": "upstream"}


def __getattr__(name: str) -> Any:
    home = _HOME.get(name)
    if home is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(importlib.import_module(f".{home}", __name__), name)
