"""Capture any harness through HTTP: a recording reverse proxy
(:class:`RecordingProxy`, ``fidelity proxy``) and a scripted fake provider
(:class:`ScriptedUpstream`, ``fidelity upstream``); :mod:`.parent` is their
seam to the cache simulator. Needs the ``proxy`` extra (aiohttp). docs/proxy.md."""

from __future__ import annotations

from .parent import ParentIndex, Verdict, judge
from .script import Script, load_script, parse_script
from .server import RecordingProxy, serve
from .upstream import ScriptedUpstream

__all__ = ["RecordingProxy", "serve", "ScriptedUpstream", "Script", "load_script", "parse_script",
           "ParentIndex", "Verdict", "judge"]
