"""Capture any harness through HTTP: a recording reverse proxy
(:mod:`.server`, ``fidelity proxy``) and a scripted fake provider
(:mod:`.upstream`, ``fidelity upstream``); :mod:`.parent` is their seam to
the cache simulator. Needs the ``proxy`` extra (aiohttp). docs/proxy.md."""

__all__: list[str] = []
