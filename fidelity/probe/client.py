"""A minimal client for OpenAI-compatible endpoints: send one request, read back
the prompt and cached tokens it reports (:func:`fidelity.traffic.usage.cache_report`).
The API key, from a named environment variable, goes only into the
``Authorization`` header; every failure is a one-line :class:`ProbeError`.
"""

from __future__ import annotations

import json
import os
import urllib.error
import urllib.request
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from ..errors import FidelityError
from ..traffic.usage import cache_report

__all__ = ["ProbeError", "Reported", "Endpoint", "reported_usage"]


class ProbeError(FidelityError):
    """The endpoint cannot be probed (unreachable, refused, no cache report)."""


@dataclass(frozen=True)
class Reported:
    """What the server said about one request's prompt."""

    prompt_tokens: int
    cached_tokens: int
    source: str


def reported_usage(response: Mapping[str, Any]) -> Reported | None:
    """Prompt and cached tokens from a response body, or ``None`` when the
    server reports no cached-token figure."""
    got = cache_report(response)
    return Reported(*got) if got is not None else None


class Endpoint:
    """An OpenAI-compatible server at ``url`` (``http://host:port`` or
    ``.../v1``), with an optional key taken from the environment variable
    named ``key_env``."""

    def __init__(self, url: str, *, key_env: str | None = None, timeout: float = 120.0) -> None:
        url = url.rstrip("/")
        if not url.startswith(("http://", "https://")):
            raise ProbeError(f"{url}: not an http(s) URL")
        self.base = url[: -len("/v1")] if url.endswith("/v1") else url
        self.timeout = timeout
        self._key: str | None = None
        if key_env:
            key = os.environ.get(key_env)
            if not key:
                raise ProbeError(f"environment variable {key_env} is not set (it should hold the API key)")
            self._key = key

    def __repr__(self) -> str:  # never shows the key
        return f"Endpoint({self.base!r})"

    def _headers(self) -> dict[str, str]:
        headers = {"Content-Type": "application/json", "Accept": "application/json"}
        if self._key:
            headers["Authorization"] = f"Bearer {self._key}"
        return headers

    def request(self, method: str, path: str, body: bytes | None = None) -> bytes:
        """Raw response bytes of ``method path``; :class:`ProbeError` on any failure."""
        req = urllib.request.Request(self.base + path, data=body, method=method, headers=self._headers())
        try:
            with urllib.request.urlopen(req, timeout=self.timeout) as resp:  # noqa: S310 (the user's own URL)
                data: bytes = resp.read()
                return data
        except urllib.error.HTTPError as exc:
            detail = exc.read()[:300].decode("utf-8", "replace").replace("\n", " ")
            if exc.code in (401, 403):
                raise ProbeError(f"{self.base}{path}: HTTP {exc.code}: the key was refused "
                                 "(check the variable named by --key-env)") from None
            raise ProbeError(f"{self.base}{path}: HTTP {exc.code}: {detail}") from None
        except (TimeoutError, urllib.error.URLError, ConnectionError, OSError) as exc:
            reason = getattr(exc, "reason", exc)
            raise ProbeError(f"{self.base}{path}: unreachable ({reason})") from None

    def get_json(self, path: str) -> Any:
        data = self.request("GET", path)
        try:
            return json.loads(data)
        except ValueError:
            raise ProbeError(f"{self.base}{path}: response is not JSON") from None

    def send(self, path: str, body: Mapping[str, Any] | bytes) -> tuple[dict[str, Any], Reported]:
        """POST ``body`` to ``path`` (``/v1/chat/completions``, ``/v1/completions``)
        and return the response with the figures it reports."""
        data = body if isinstance(body, bytes) else json.dumps(body, ensure_ascii=False).encode("utf-8")
        raw = self.request("POST", path, data)
        try:
            response = json.loads(raw)
        except ValueError:
            raise ProbeError(f"{self.base}{path}: response is not JSON") from None
        if not isinstance(response, dict):
            raise ProbeError(f"{self.base}{path}: response is not a JSON object")
        got = reported_usage(response)
        if got is None:
            raise ProbeError(f"{self.base}{path}: the server reports no cached tokens (vLLM: start it with "
                             "--enable-prompt-tokens-details; SGLang: --enable-cache-report)")
        return response, got

    def metrics(self) -> str | None:
        """The Prometheus ``/metrics`` text, or ``None`` where there is none."""
        try:
            return self.request("GET", "/metrics").decode("utf-8", "replace")
        except ProbeError:
            return None
