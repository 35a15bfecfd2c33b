"""Real agent harnesses, release by release: install one from its registry,
drive it headless through ``fidelity proxy`` against the scripted upstream,
and judge each subagent child against its parent.

* :mod:`~fidelity.harness.descriptor` -- one TOML file per harness (data).
* :mod:`~fidelity.harness.install` -- releases and installs in a cache folder.
* :mod:`~fidelity.harness.drive` -- one headless run behind the proxy.
* :mod:`~fidelity.harness.capture` -- a release's pairs kept as fixtures.
* :mod:`~fidelity.harness.judge` -- the diff library's verdict per provider.
* :mod:`~fidelity.harness.matrix` -- the matrix and its views.
* :mod:`~fidelity.harness.bisect` -- the first release whose verdict differs.

Needs the ``proxy`` extra (aiohttp) to drive a harness; reading captures
and building the matrix does not start any server.
"""

from __future__ import annotations

from .bisect import first_change
from .descriptor import Descriptor, Kind, load, load_all, names
from .judge import PROVIDERS, Finding, judge

__all__ = ["Descriptor", "Kind", "load", "load_all", "names", "Finding", "judge", "PROVIDERS", "first_change"]
