"""How a body is written (key order, separators, escaping, number spelling,
added fields): a :class:`Layout` turns a renderer's ordered dict into bytes.

* :class:`Written`, the layout of one parsed body (``Request.layout``): so
  ``render(parse(b)) == b``, and a derived request keeps the original bytes of
  every unchanged value, the original key order of a changed object, and the
  original separators and escaping for new values.
* :class:`ClientProfile`, a named client (``openai-python>=3``,
  ``anthropic-stream``...) for a request with no original bytes
  (:mod:`fidelity.wire.profiles`).

>>> w = Written.of(b'{"messages": [], "model": "m"}')
>>> w.write({"model": "m", "messages": [], "stream": True})
b'{"messages": [], "model": "m", "stream": true}'
"""

from __future__ import annotations

import json
import re
from collections import deque
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

import orjson

from ..errors import InputError
from ..jsonbytes import iter_elements, iter_members, loads, skip_value, skip_ws
from ..model import FrozenDict
from . import spans

__all__ = ["Layout", "Written", "ClientProfile", "merge_order", "same_value"]


class Layout(Protocol):
    """Anything that turns a renderer's ordered body dict into wire bytes."""

    name: str

    def write(self, body: Mapping[str, Any]) -> bytes: ...


# --------------------------------------------------------------------------
# comparing values the way the wire sees them


def _is_num(v: Any) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool)


def same_value(new: Any, old: Any) -> bool:
    """True when ``new`` may be written with ``old``'s exact bytes: equal data,
    equal key order, numbers equal in value (``1`` and ``1.0`` are the same
    number spelled two ways; the original spelling is kept)."""
    if isinstance(new, Mapping):
        if not isinstance(old, Mapping) or list(new) != list(old):  # the same keys in the same order
            return False
        return all(same_value(new[k], old[k]) for k in new)
    if isinstance(new, (list, tuple)):
        if not isinstance(old, (list, tuple)) or len(new) != len(old):
            return False
        return all(same_value(a, b) for a, b in zip(new, old))
    if _is_num(new):
        return _is_num(old) and new == old
    if isinstance(new, bool) or new is None:
        return new is old
    return type(new) is type(old) and new == old


def merge_order(old: Sequence[str], new: Sequence[str]) -> list[str]:
    """The keys of ``new`` in ``old``'s order; a key ``old`` lacks goes right
    after the last-placed of the keys that precede it in ``new`` (at the
    front when none does), so a key the renderer puts late stays late.

    >>> merge_order(["messages", "model", "stream"], ["model", "messages", "tools", "stream"])
    ['messages', 'model', 'tools', 'stream']
    """
    present = set(new)
    out = [k for k in old if k in present]
    placed = set(out)
    for i, key in enumerate(new):
        if key in placed:
            continue
        before = [out.index(prev) for prev in new[:i] if prev in placed]
        out.insert(max(before) + 1 if before else 0, key)
        placed.add(key)
    return out


# --------------------------------------------------------------------------
# the original body as a tree of byte spans


@dataclass
class _Node:
    """A value of the original body: its span and, on demand, its children."""

    body: bytes
    start: int
    end: int
    _members: dict[str, tuple[int, _Node]] | None = None
    _elements: list[_Node] | None = None

    def members(self) -> dict[str, tuple[int, _Node]]:
        """key -> (offset of the key's opening quote, value node)."""
        if self._members is None:
            self._members = {}
            if self.body[self.start : self.start + 1] == b"{":
                for m in iter_members(self.body, self.start):
                    self._members[m.key] = (m.start, _Node(self.body, m.value_start, m.end))
        return self._members

    def elements(self) -> list[_Node]:
        if self._elements is None:
            self._elements = []
            if self.body[self.start : self.start + 1] == b"[":
                self._elements = [_Node(self.body, s, e) for s, e in iter_elements(self.body, self.start)]
        return self._elements

    @property
    def raw(self) -> bytes:
        return self.body[self.start : self.end]


_NON_ASCII_ESCAPE = re.compile(rb"\\u(?:00[89a-fA-F][0-9a-fA-F]|0[1-9a-fA-F][0-9a-fA-F]{2}|[1-9a-fA-F][0-9a-fA-F]{3})")


def _first_separators(body: bytes) -> tuple[str | None, str | None]:
    """The item and key separators of the first object or array that shows
    them (``", "`` / ``": "`` for ``json.dumps``, ``","`` / ``":"`` compact)."""
    item = key = None
    todo = deque([_Node(body, skip_ws(body, 0), len(body))])
    seen = 0
    while todo and seen < 2000 and (item is None or key is None):  # breadth first, bounded
        node = todo.popleft()
        seen += 1
        opener = body[node.start : node.start + 1]
        if opener == b"{":
            members = list(iter_members(body, node.start))
            for m in members:
                if key is None:
                    k_end = skip_value(body, m.start)  # the end of the key string
                    key = body[k_end : m.value_start].decode("latin-1")
                todo.append(_Node(body, m.value_start, m.end))
            if item is None and len(members) >= 2:
                item = body[members[0].end : members[1].start].decode("latin-1")
        elif opener == b"[":
            spans = list(iter_elements(body, node.start))
            if item is None and len(spans) >= 2:
                item = body[spans[0][1] : spans[1][0]].decode("latin-1")
            todo.extend(_Node(body, s, e) for s, e in spans)
    return item, key


# --------------------------------------------------------------------------
# fresh values


#: exact types that ``orjson.dumps`` and ``json.dumps(..., ensure_ascii=False,
#: separators=(",", ":"))`` write alike (floats: see :func:`_orjson_agrees`)
_SAME_LEAVES: frozenset[type] = frozenset({str, int, bool, type(None)})
_SAME_OBJECTS: frozenset[type] = frozenset((dict, FrozenDict))


def _orjson_agrees(value: Any) -> bool:
    """True when ``orjson.dumps(value)`` (already computed by the caller) is
    the compact ``json.dumps`` rendering byte for byte: every node is exactly
    a dict, ``FrozenDict``, list, tuple, str, int, bool or ``None`` (no
    subclass), or a finite float whose ``repr`` has no exponent (orjson
    writes ``1e-05`` as ``0.00001`` and NaN as ``null``). Strings: every code
    point is checked in ``tests/wire/test_wire_layout.py``."""
    return _agrees([value])[0]


#: id -> a FrozenDict that :func:`_agrees` found written alike and that holds
#: no mutable container (so it stays so); held, so that its id stays its own
_AGREED: dict[int, FrozenDict] = {}


def _agrees(stack: list[Any]) -> tuple[bool, bool]:
    """:func:`_orjson_agrees` of every value in ``stack`` (emptied), and
    whether they hold only immutable containers; such a ``FrozenDict`` found
    written alike is remembered (:data:`_AGREED`) and not walked again."""
    frozen = True
    pop, push_all = stack.pop, stack.extend
    while stack:
        node = pop()
        kind = type(node)
        if kind in _SAME_LEAVES:
            continue
        if kind is FrozenDict:
            if _AGREED.get(id(node)) is node:
                continue
            ok, inner_frozen = _agrees(list(node.values()))
            if not ok:
                return False, False
            if inner_frozen:
                if len(_AGREED) >= 1 << 16:
                    _AGREED.clear()
                _AGREED[id(node)] = node
            else:
                frozen = False
        elif kind is tuple:
            push_all(node)
        elif kind is dict:
            frozen = False
            push_all(node.values())
        elif kind is list:
            frozen = False
            push_all(node)
        elif kind is float:
            spelled = repr(node)
            if "e" in spelled or "n" in spelled:  # 1e-05, 1e+16, nan, inf, -inf
                return False, False
        else:
            return False, False
    return True, frozen


def _compact(value: Any, *, remember: bool = False) -> bytes | None:
    """``json.dumps(value, ensure_ascii=False, separators=(",", ":"))`` as
    UTF-8 written by orjson where that gives the same bytes, else ``None``.
    ``remember``: an object's layout is kept (:func:`fidelity.wire.spans.remember`)
    so that its cache view need not lay it out again."""
    if remember and type(value) in _SAME_OBJECTS:
        try:
            out, members = spans.laid_out(value)
        except TypeError:  # orjson refused a value (JSONEncodeError is a TypeError), or a key is not a string
            return None
        if not _orjson_agrees(value):
            return None
        spans.remember(out, members)
        return out
    try:
        out = orjson.dumps(value)
    except orjson.JSONEncodeError:  # a lone surrogate, an int past 64 bits, a non-str key, too deep, a cycle
        return None
    return out if _orjson_agrees(value) else None


def _dump(value: Any, *, item_sep: str, key_sep: str, ensure_ascii: bool, indent: str | None, depth: int,
          allow_nan: bool = False, remember: bool = False) -> bytes:
    """``value`` serialised as a client with these settings writes it
    (``json.dumps`` with these settings, as UTF-8); ``remember``: see :func:`_compact`."""
    if indent is None and not ensure_ascii and item_sep == "," and key_sep == ":":
        fast = _compact(value, remember=remember)
        if fast is not None:
            return fast
    try:
        if indent is None:
            text = json.dumps(value, ensure_ascii=ensure_ascii, separators=(item_sep, key_sep), allow_nan=allow_nan)
        else:
            text = json.dumps(value, ensure_ascii=ensure_ascii, separators=(item_sep.rstrip(" "), key_sep),
                              indent=indent, allow_nan=allow_nan).replace("\n", "\n" + indent * depth)
    except ValueError as exc:
        raise InputError(f"cannot serialise as JSON: {exc}") from None
    except TypeError as exc:
        raise InputError(f"not a JSON value: {exc}") from None
    return _encode(text)


def _encode(text: str) -> bytes:
    try:
        return text.encode("utf-8")
    except UnicodeEncodeError as exc:
        raise InputError(
            f"string holds a lone surrogate U+{ord(text[exc.start]):04X}; it cannot be sent as UTF-8"
        ) from None


# --------------------------------------------------------------------------
# layouts


@dataclass(frozen=True)
class Written:
    """The layout of one real body: its separators, whether non-ASCII text
    was escaped, its indentation unit; ``None`` where the body does not show
    it (the ``fallback`` profile decides; ``indent``: single line)."""

    body: bytes
    obj: Any = field(repr=False, compare=False, hash=False)
    item_sep: str | None = None
    key_sep: str | None = None
    ensure_ascii: bool | None = None
    indent: str | None = None
    #: the profile that fills in what this body does not show
    fallback: ClientProfile | None = field(default=None, compare=False, hash=False)
    #: top-level keys the original left to its URL (Bedrock / Vertex Claude
    #: bodies name the model in the URL): not written unless the original had them
    url_keys: tuple[str, ...] = ()
    name: str = "written"

    @classmethod
    def of(cls, body: bytes, obj: Any = None, *, fallback: ClientProfile | None = None,
           url_keys: tuple[str, ...] = ()) -> Written:
        """The layout of ``body`` (``obj`` is its parsed value, when the caller has it)."""
        body = bytes(body)
        if obj is None:
            obj = loads(body)
        item, key = _first_separators(body)
        indent = None
        if item is not None and "\n" in item:  # pretty-printed: the unit is the first line's indentation
            m = re.match(rb"[{\[]\n([ \t]+)", body[skip_ws(body, 0):])
            indent = m.group(1).decode("latin-1") if m else "  "
            item = item.split("\n", 1)[0]
        ensure_ascii: bool | None = None  # no non-ASCII text either way
        if not body.isascii():
            ensure_ascii = False
        elif _NON_ASCII_ESCAPE.search(body):
            ensure_ascii = True
        return cls(body, obj, item, key, ensure_ascii, indent, fallback, url_keys)

    # -- settings for values the original does not hold

    def _settings(self) -> tuple[str, str, bool]:
        fb = self.fallback
        item = self.item_sep if self.item_sep is not None else (fb.item_sep if fb else ",")
        key = self.key_sep if self.key_sep is not None else (fb.key_sep if fb else ":")
        ea = self.ensure_ascii if self.ensure_ascii is not None else (fb.ensure_ascii if fb else False)
        return item, key, ea

    def write(self, body: Mapping[str, Any]) -> bytes:
        """``body`` in this layout: unchanged values as the original bytes,
        changed objects in the original key order, new values in the
        original's separators and escaping."""
        if self.url_keys and isinstance(self.obj, Mapping):
            body = {k: v for k, v in body.items() if k not in self.url_keys or k in self.obj}
        root = _Node(self.body, skip_ws(self.body, 0), len(self.body.rstrip(b" \t\r\n")))
        lead = self.body[: root.start]
        trail = self.body[root.end :]
        return lead + self._emit(body, self.obj, root, 0) + trail

    def _emit(self, new: Any, old: Any, node: _Node | None, depth: int) -> bytes:
        if node is not None and same_value(new, old):
            return node.raw
        item, key_sep, ea = self._settings()
        nl = ("\n" + self.indent * (depth + 1)) if self.indent is not None else ""
        close_nl = ("\n" + self.indent * depth) if self.indent is not None else ""

        def wrap(opener: bytes, parts: list[bytes], closer: bytes) -> bytes:
            if not parts:
                return opener + closer
            return opener + nl.encode() + (item + nl).encode().join(parts) + close_nl.encode() + closer

        if node is not None and isinstance(new, Mapping) and isinstance(old, Mapping):
            members = node.members()
            parts = []
            for k in merge_order(list(old), list(new)):
                if k in members:
                    key_start, child = members[k]
                    k_end = skip_value(self.body, key_start)
                    key_raw = self.body[key_start:k_end]
                    sep = self.body[k_end : child.start]
                    parts.append(key_raw + sep + self._emit(new[k], old[k], child, depth + 1))
                else:
                    key_raw = _encode(json.dumps(k, ensure_ascii=ea))
                    parts.append(key_raw + key_sep.encode() + self._emit(new[k], None, None, depth + 1))
            return wrap(b"{", parts, b"}")
        if node is not None and isinstance(new, (list, tuple)) and isinstance(old, list):
            elements = node.elements()
            kept = min(len(old), len(elements))
            return wrap(b"[", [self._emit(value, old[i], elements[i], depth + 1) if i < kept
                               else self._emit(value, None, None, depth + 1) for i, value in enumerate(new)], b"]")
        if node is not None and _is_num(new) and _is_num(old) and new == old:
            return node.raw
        allow_nan = self.fallback.allow_nan if self.fallback is not None else False
        return _dump(new, item_sep=item, key_sep=key_sep, ensure_ascii=ea, indent=self.indent, depth=depth,
                     allow_nan=allow_nan)


@dataclass(frozen=True)
class ClientProfile:
    """A named client: how it orders, separates and escapes a body.
    ``top_keys``: its top-level order (then the others; ``()``: the
    renderer's); ``trailing``: keys moved last; ``adds``: members it always
    sends; ``verified``: the versions whose bytes the tests compare with."""

    name: str
    dialects: tuple[str, ...]
    top_keys: tuple[str, ...] = ()
    trailing: tuple[str, ...] = ()
    adds: tuple[tuple[str, Any], ...] = ()
    item_sep: str = ","
    key_sep: str = ":"
    ensure_ascii: bool = False
    #: NaN / Infinity written as ``json.dumps`` does (clients that call it with defaults)
    allow_nan: bool = False
    verified: str = ""

    def order(self, body: Mapping[str, Any]) -> dict[str, Any]:
        """``body`` reordered (and completed) as this client sends it."""
        fields = dict(body)
        for k, v in self.adds:
            fields.setdefault(k, v)
        if self.top_keys:
            known = set(self.top_keys)
            out = {k: fields[k] for k in self.top_keys if k in fields}
            out.update((k, v) for k, v in fields.items() if k not in known)
        else:
            out = fields
        for k in self.trailing:
            if k in out:
                out[k] = out.pop(k)
        return out

    def write(self, body: Mapping[str, Any]) -> bytes:
        return _dump(self.order(body), item_sep=self.item_sep, key_sep=self.key_sep,
                     ensure_ascii=self.ensure_ascii, indent=None, depth=0, allow_nan=self.allow_nan, remember=True)
