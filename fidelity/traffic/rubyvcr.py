"""Ruby VCR cassettes: ``http_interactions`` in YAML (or JSON, as Betamax writes them).

Format: the VCR gem, ``lib/vcr/structs.rb`` and its YAML serializer
(https://github.com/vcr/vcr, https://benoittgt.github.io/vcr/); an example
is in docs/replay.md. :func:`load` reads Psych's ``!binary`` base64 strings
as bytes and other local tags (``!ruby/...``) as the plain value; YAML
aliases and nesting deeper than :data:`fidelity.jsonio.MAX_DEPTH` are refused."""

from __future__ import annotations

import base64
import binascii
from pathlib import Path
from typing import Any

from ..errors import InputError
from ..jsonio import MAX_DEPTH, depth

__all__ = ["load", "is_ruby_vcr"]


def is_ruby_vcr(head: bytes) -> bool:
    """Whether the first bytes of a YAML file are a Ruby VCR cassette's."""
    return b"http_interactions:" in head


def load(path: str | Path, data: bytes) -> Any:
    """The parsed cassette ``data`` (read from ``path``, named in errors):
    JSON when it starts with ``{`` (Betamax writes the same structure as JSON), else YAML."""
    if data.lstrip()[:1] == b"{":
        from ..jsonio import loads

        return _checked(loads(data, path=path), path)
    try:
        import yaml
    except ImportError:
        raise InputError("a YAML cassette needs PyYAML (pip install pyyaml)", path=path) from None
    class Loader(yaml.SafeLoader):  # type: ignore[misc]  # the Python loader: libyaml's composer cannot be told to refuse aliases
        """The safe loader, plus Ruby's ``!binary``; aliases refused."""

        def compose_node(self, parent: Any, index: Any) -> Any:
            if self.check_event(yaml.AliasEvent):
                raise InputError("YAML alias in a Ruby VCR cassette (VCR writes none): refused", path=path)
            return super().compose_node(parent, index)

    def binary(loader: Any, node: Any) -> bytes:
        text = loader.construct_scalar(node)
        try:
            return base64.b64decode("".join(str(text).split()), validate=True)
        except (binascii.Error, ValueError):
            raise InputError("a !binary value is not base64", path=path, line=node.start_mark.line + 1) from None

    def plain(loader: Any, suffix: str, node: Any) -> Any:
        if isinstance(node, yaml.MappingNode):
            return loader.construct_mapping(node, deep=True)
        if isinstance(node, yaml.SequenceNode):
            return loader.construct_sequence(node, deep=True)
        return loader.construct_scalar(node)

    Loader.add_constructor("!binary", binary)
    Loader.add_multi_constructor("!ruby/", plain)
    try:
        doc = yaml.load(data, Loader=Loader)  # safe loader: plain data, !binary, no aliases
    except yaml.YAMLError as exc:
        raise InputError(f"not valid YAML: {str(exc).splitlines()[0][:160]}", path=path) from None
    except RecursionError:
        raise InputError(f"YAML nested more than {MAX_DEPTH} levels deep", path=path) from None
    if depth(doc, MAX_DEPTH) > MAX_DEPTH:
        raise InputError(f"YAML nested more than {MAX_DEPTH} levels deep", path=path)
    return _checked(doc, path)


def _checked(doc: Any, path: str | Path) -> Any:
    if not isinstance(doc, dict) or not isinstance(doc.get("http_interactions"), list):
        raise InputError("not a Ruby VCR cassette (expected a mapping with an http_interactions list)", path=path)
    return doc
