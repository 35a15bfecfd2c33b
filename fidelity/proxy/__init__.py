"""Capture any harness through HTTP: a recording reverse proxy
(``fidelity proxy``) and a scripted fake provider (``fidelity upstream``).

* :class:`RecordingProxy` -- forwards requests unchanged, streams replies
  through, writes each request as a redacted snapshot with the reported
  usage, and says which earlier request it reads from and what it loses.
* :class:`ScriptedUpstream` -- answers OpenAI Chat/Responses, Anthropic
  Messages and Gemini requests from a script, with usage figures predicted
  by fidelity's cache models.
* :mod:`fidelity.proxy.parent` -- the seam to the cache simulator.

Needs the ``proxy`` extra (``pip install 'fidelity[proxy]'``: aiohttp).
"""

from __future__ import annotations

from .parent import ParentIndex, Verdict, judge
from .script import Script, load_script, parse_script
from .server import RecordingProxy, serve
from .upstream import ScriptedUpstream

__all__ = ["RecordingProxy", "serve", "ScriptedUpstream", "Script", "load_script", "parse_script",
           "ParentIndex", "Verdict", "judge"]
