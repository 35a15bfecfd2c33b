"""The JSON view: the report dict, two-space indented, keys in the order
built (never sorted), UTF-8, trailing newline."""

from __future__ import annotations

from typing import Any

import orjson

__all__ = ["render_json"]


def render_json(data: dict[str, Any]) -> bytes:
    return orjson.dumps(data, option=orjson.OPT_INDENT_2) + b"\n"
