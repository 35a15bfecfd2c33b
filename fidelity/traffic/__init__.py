"""Recorded traffic, read one way for every command.

* :mod:`.usage` -- the one reader of what a response reported (JSON, SSE,
  AWS event streams; every provider's fields), whole or as it streams;
* :mod:`.exchange` -- :class:`~.exchange.Exchange`, one recorded request
  (body bytes, URL, time, session, usage, status), and request times;
* :mod:`.sources` -- the registry of recording readers (vcrpy and Ruby VCR
  cassettes, HAR, claude-trace, snapshot folders) and the one folder listing;
* :mod:`.apart` -- the one rule for what is set apart (not a generation
  call, a failed request, server tools, state or templates) and why.

``fidelity replay``, ``fidelity tokens-check``, ``fidelity scan`` and the
survey read recordings through these modules, so one recording gives one
set of requests, figures and decisions whichever command reads it.
"""

__all__: list[str] = []
