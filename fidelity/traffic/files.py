"""Reading a recording file's bytes: gunzipped when compressed, and a vcrpy
cassette's document (JSON, or YAML through the one guarded loader
:func:`fidelity.traffic._yaml.load_yaml`)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from ..gzipped import gunzip, is_gzip
from ..jsonio import loads, read_bytes
from ._yaml import load_yaml

__all__ = ["read_source", "load_cassette"]


def read_source(path: str | Path) -> bytes:
    """The bytes of a recording, gunzipped when it is a ``.gz`` file (or
    starts with the gzip magic): ``.yaml.gz``, ``.har.gz``, ``.jsonl.gz``;
    a gzip bomb stops at the limits of :mod:`fidelity.gzipped`."""
    data = read_bytes(path)
    return gunzip(data, path) if is_gzip(path, data) else data


def load_cassette(path: str | Path) -> Any:
    """The document of a vcrpy cassette file (JSON when it starts with ``{``,
    else YAML), gunzipped first when compressed. Every reader of vcrpy
    cassettes calls this."""
    data = read_source(path)
    if data.lstrip()[:1] == b"{":
        return loads(data, path=path)
    return load_yaml(data, path)
