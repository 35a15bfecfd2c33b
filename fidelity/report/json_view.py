"""The JSON view: the report dict, two-space indented, keys in the order
built (never sorted), UTF-8, trailing newline (:func:`fidelity.formats.json_doc`,
the one JSON writer)."""

from __future__ import annotations

from typing import Any

from ..formats import json_doc

__all__ = ["render_json"]


def render_json(data: dict[str, Any]) -> bytes:
    return json_doc(data)
