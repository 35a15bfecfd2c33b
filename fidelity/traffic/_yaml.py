"""The one guarded YAML loader: every YAML cassette is read through :func:`load_yaml`.

The document is composed into PyYAML's node graph and measured without
expanding aliases; only a document within the budget is constructed:
aliases add at most :data:`MAX_ALIAS_NODES` nodes or as many as the document
has distinct ones, whichever is larger; depth at most
:data:`fidelity.jsonio.MAX_DEPTH` (a recursive alias is refused the same
way); duplicate mapping keys are refused with their line. Why: docs/hostile-input.md, "Limits"."""

from __future__ import annotations

import itertools
from pathlib import Path
from typing import Any

from ..errors import InputError
from ..jsonio import MAX_DEPTH

__all__ = ["load_yaml", "MAX_ALIAS_NODES"]

#: nodes that aliases may add to a document beyond its distinct ones (or as
#: many as it has distinct nodes, when that is more)
MAX_ALIAS_NODES = 100_000


def _loader_class(path: str | Path) -> Any:
    import yaml

    base = getattr(yaml, "CSafeLoader", yaml.SafeLoader)

    class Loader(base):  # type: ignore[valid-type,misc]
        """The safe loader, refusing duplicate keys as every fidelity reader does."""

        def construct_mapping(self, node: Any, deep: bool = False) -> Any:
            seen: set[Any] = set()
            for key_node, _ in node.value:
                key = self.construct_object(key_node, deep=True)
                if isinstance(key, (str, int, float, bool, bytes)) or key is None:
                    if key in seen:
                        raise InputError(f"duplicate key {str(key)[:80]!r} in a YAML mapping: which value wins "
                                         "is ambiguous; remove one", path=path, line=key_node.start_mark.line + 1)
                    seen.add(key)
            return super().construct_mapping(node, deep=deep)

    return Loader


def measure(root: Any) -> tuple[int, int, int]:
    """``(distinct nodes, expanded nodes, depth)`` of a composed YAML node
    graph, each collection visited once (iteratively: no recursion limit);
    ``depth`` is ``MAX_DEPTH + 1`` for a recursive alias. A scalar has depth
    0 and a collection one more than its deepest child, as
    :func:`fidelity.jsonio.depth` counts parsed values. Scalars are counted
    where they occur (an alias of a scalar expands to one value, so sharing
    one costs nothing); collections are counted once each in ``distinct``
    and once per occurrence in ``expanded``."""
    from yaml.nodes import CollectionNode, MappingNode

    if not isinstance(root, CollectionNode):
        return 1, 1, 0
    size: dict[int, int] = {}
    deep: dict[int, int] = {}
    open_: set[int] = set()  # the collections on the current path: meeting one again is a cycle
    distinct = 0
    stack: list[tuple[Any, list[Any] | None, int]] = [(root, None, 0)]
    while stack:
        node, kids, scalars = stack.pop()
        nid = id(node)
        if kids is not None:  # its children are measured: close it
            size[nid] = 1 + scalars + sum([size[id(k)] for k in kids])
            d = deep[nid] = 1 + max([deep[id(k)] for k in kids], default=0)
            open_.discard(nid)
            if d > MAX_DEPTH:
                return distinct, size[nid], d
            continue
        if nid in size:
            continue
        if nid in open_:
            return distinct, 0, MAX_DEPTH + 1
        open_.add(nid)
        value = node.value
        every = list(itertools.chain.from_iterable(value)) if isinstance(node, MappingNode) else value
        kids = [k for k in every if isinstance(k, CollectionNode)]
        scalars = len(every) - len(kids)
        distinct += 1 + scalars
        stack.append((node, kids, scalars))
        stack.extend((k, None, 0) for k in kids if id(k) not in size)
    return distinct, size[id(root)], deep[id(root)]


def _compose(data: bytes, loader: Any) -> Any:
    """The document's node graph (``None`` for an empty stream); a seam the
    tests use to simulate what other PyYAML versions do."""
    return loader.get_single_node()


def load_yaml(data: bytes, path: str | Path) -> Any:
    """The YAML document in ``data`` as Python values, refused with one
    :class:`InputError` naming ``path`` when it is not YAML, nests deeper
    than :data:`fidelity.jsonio.MAX_DEPTH`, expands past the alias budget,
    or repeats a mapping key."""
    try:
        import yaml
    except ImportError:
        raise InputError("a YAML cassette needs PyYAML (pip install pyyaml)", path=path) from None
    too_deep = InputError(f"YAML nested more than {MAX_DEPTH} levels deep", path=path)
    loader = _loader_class(path)(data)
    try:
        try:
            node = _compose(data, loader)
        except yaml.YAMLError as exc:
            if "nesting depth" in str(getattr(exc, "problem", "") or ""):
                raise too_deep from None
            raise InputError(f"not valid YAML: {str(exc).splitlines()[0][:160]}", path=path) from None
        except RecursionError:  # the pure-Python composer recurses per level
            raise too_deep from None
        if node is None:
            return None
        distinct, expanded, depth = measure(node)
        if depth > MAX_DEPTH:
            raise too_deep
        if expanded - distinct > max(MAX_ALIAS_NODES, distinct):
            raise InputError(f"YAML aliases expand {distinct:,} nodes to {expanded:,} (an alias bomb?); "
                             f"refused before expanding them (aliases may add at most "
                             f"{max(MAX_ALIAS_NODES, distinct):,})", path=path)
        try:
            return loader.construct_document(node)  # safe constructor: plain data and !!binary only
        except yaml.YAMLError as exc:
            raise InputError(f"not valid YAML: {str(exc).splitlines()[0][:160]}", path=path) from None
    finally:
        loader.dispose()
