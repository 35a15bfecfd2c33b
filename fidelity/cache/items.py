"""The item view of a parsed request body: its cache view's segments in the
provider's cache order as parsed values (items; kinds, indexes and pointers
as the dialect's ``cache_view`` has them), each serialised as compact JSON
(docs/builder.md), and the partition key: the input of the one builder
(:mod:`fidelity.cache.builder`) and of the scan's partitioning.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import lru_cache
from operator import is_
from typing import Any, NamedTuple

import orjson

from ..jsonbytes import pointer

__all__ = ["Item", "FastView", "build_view", "view_after", "common_prefix", "shared_values", "encode", "partition_key", "dumps_value", "trimmed", "SUPPORTED"]

#: dialects this module knows the cache layout of (others fall back to the
#: dialect's exact ``cache_view``)
SUPPORTED = frozenset({"openai-chat", "deepseek", "dashscope", "vllm", "sglang", "openai-responses",
                       "anthropic-messages", "gemini"})


class Item(NamedTuple):
    """One segment before serialisation: kind, index within its kind, where
    it sits in the body (pointer tokens; :attr:`pointer` is the JSON pointer,
    built only when asked for), and the parsed value."""

    kind: str
    index: int  # type: ignore[assignment]  # a field named like tuple.index: mypy flags the shadowing, the field wins at run time
    where: tuple[Any, ...]
    value: Any

    @property
    def pointer(self) -> str:
        return _pointer(self.where)


@lru_cache(maxsize=65536)
def _pointer(where: tuple[Any, ...]) -> str:
    """The JSON pointer of ``where`` (the same few places recur in every request)."""
    return pointer(*where)


@dataclass(frozen=True)
class FastView:
    """A body's cache view: ``params`` (the cache-key members as
    ``"key":value`` bytes) and the prompt segments in cache order."""

    dialect: str
    params: bytes
    items: tuple[Item, ...]
    #: applied to a value before it is serialised (equal prompts, equal bytes)
    normalise: Any = None
    #: the layout the items were made from (:func:`view_after` reuses the
    #: previous view's items when it is the same); ``None``: not reusable
    shape: tuple[Any, ...] | None = None
    #: the items' values, in order (kept with ``shape``)
    values: list[Any] | None = None


def trimmed(data: bytes) -> bytes:
    """``data`` copied into an allocation of its own length, for bytes the
    scan keeps (segments, memo keys): ``orjson.dumps`` returns bytes that
    keep its whole write buffer (home-assistant/core#181240; docs/scan.md,
    "orjson keeps its buffer"). A two-item ``join``: one exact-size copy."""
    return b"".join((data, b""))


def dumps_value(value: Any) -> bytes:
    """Compact JSON of a parsed value, key order kept, in an allocation of
    its own size (:func:`trimmed`: the scan keeps these). orjson refuses lone
    surrogates (a body may hold ``"\\ud800"``); the standard library keeps them."""
    try:
        return trimmed(orjson.dumps(value))
    except TypeError:
        return json.dumps(value, ensure_ascii=False, separators=(",", ":")).encode("utf-8", "surrogatepass")


def _params(obj: dict[str, Any], keys: Sequence[str]) -> bytes:
    return b",".join(dumps_value(k) + b":" + dumps_value(obj[k]) for k in keys if k in obj)


def _is_system(m: Any) -> bool:
    return isinstance(m, dict) and m.get("role") in ("system", "developer")


def _responses(d: Any, obj: dict[str, Any], first_only: bool = False) -> FastView:
    tools_v = obj.get("tools")
    tools = [Item("tools", i, ("tools", i,), t) for i, t in enumerate(tools_v)] \
        if isinstance(tools_v, list) else []
    system: list[Item] = []
    if "instructions" in obj:
        system.append(Item("system", 0, ("instructions",), obj["instructions"]))
    rest: list[Item] = []
    items = obj.get("input")
    if isinstance(items, list):
        leading = True
        for i, it in enumerate(items):
            if leading and _is_system(it):
                system.append(Item("system", len(system), ("input", i,), it))
            else:
                leading = False
                rest.append(Item("message", len(rest), ("input", i,), it))
                if first_only:
                    break
    elif "input" in obj:
        rest.append(Item("message", 0, ("input",), items))
    return FastView(d.name, _params(obj, d.cache_keys), tuple(tools + system + rest))


def _laid_out(name: str, params: bytes, normalise: Any, shape: tuple[Any, ...], values: list[Any],
              first_only: bool) -> FastView:
    """The view of a body laid out as ``shape`` (:func:`_item`); ``first_only``:
    the first item alone (no ``shape``: the items are not all there)."""
    n = len(values)
    if first_only:
        n = min(n, 1)
    items = tuple(_item(shape, i, values[i]) for i in range(n))
    return FastView(name, params, items, normalise, None if first_only else shape, None if first_only else values)


def _blocks(m: Any) -> Any:
    """A message whose ``content`` is a string, as the one text block it
    stands for: Anthropic renders both alike, so the cache sees one prompt
    (the mirascope multi-turn cassette sends a turn as a block with
    ``cache_control``, then as a string, and reads it from cache)."""
    if isinstance(m, dict) and isinstance(m.get("content"), str):
        return {**m, "content": [{"type": "text", "text": m["content"]}]}
    return m


def _gemini(d: Any, obj: dict[str, Any], first_only: bool = False) -> FastView:
    from ..wire.gemini import CACHE_MEMBERS

    found: list[bytes] = []
    for where, key in CACHE_MEMBERS:
        holder: Any = obj
        for token in [t for t in where.split("/") if t]:
            holder = holder.get(token) if isinstance(holder, dict) else None
        if isinstance(holder, dict) and key in holder:
            found.append(dumps_value(key) + b":" + dumps_value(holder[key]))
    out: list[Item] = []
    si = obj.get("systemInstruction")
    parts = si.get("parts") if isinstance(si, dict) else None
    if isinstance(parts, list):
        out += [Item("system", i, ("systemInstruction", "parts", i,), p) for i, p in enumerate(parts)]
    n = 0
    tools = obj.get("tools")
    tools = tools if isinstance(tools, list) else []
    for t, entry in enumerate(tools):
        decls = entry.get("functionDeclarations") if isinstance(entry, dict) else None
        if isinstance(decls, list):
            for k, decl in enumerate(decls):
                out.append(Item("tools", n, ("tools", t, "functionDeclarations", k,), decl))
                n += 1
        else:
            out.append(Item("tools", n, ("tools", t,), entry))
            n += 1
    contents = obj.get("contents")
    contents = contents if isinstance(contents, list) else []
    if first_only:
        contents = contents[:1]
    out += [Item("message", i, ("contents", i,), c) for i, c in enumerate(contents)]
    return FastView(d.name, b",".join(found), tuple(out))


def build_view(dialect: Any, obj: dict[str, Any], first_only: bool = False) -> FastView:
    """The cache view of a parsed body in ``dialect`` (a :class:`~fidelity.wire.Dialect`);
    ``first_only``: the params and the first segment (at least; the first
    alone for a chat or Anthropic body), all a partition key needs."""
    name = dialect.name
    laid = _layout(dialect, obj)
    if laid is not None:
        shape, values, keys, normalise = laid
        return _laid_out(name, _params(obj, keys), normalise, shape, values, first_only)
    if name == "openai-responses":
        return _responses(dialect, obj, first_only)
    if name == "gemini":
        return _gemini(dialect, obj, first_only)
    raise ValueError(f"no fast cache view for dialect {name}")


def _layout(dialect: Any, obj: dict[str, Any]) -> tuple[tuple[Any, ...], list[Any], Sequence[str], Any] | None:
    """A chat or Anthropic body's layout (:func:`_item`), its cache-view
    values in order, its cache-key members and ``normalise``; ``None`` for
    other dialects."""
    name = dialect.name
    if name == "anthropic-messages":
        from ..wire.anthropic_messages import CACHE_KEYS

        return (*_anthropic_layout(dialect, obj), CACHE_KEYS, _blocks)
    if name not in ("openai-responses", "gemini") and hasattr(dialect, "cache_keys") \
            and hasattr(dialect, "cache_order"):
        return (*_chat_layout(dialect, obj), dialect.cache_keys, None)
    return None


def _chat_layout(d: Any, obj: dict[str, Any]) -> tuple[tuple[Any, ...], list[Any]]:
    """A chat body's layout (:func:`_item`) and its cache-view values in order."""
    msgs = obj.get("messages")
    msgs = msgs if isinstance(msgs, list) else []
    n_sys = 0
    for m in msgs:
        if not _is_system(m):
            break
        n_sys += 1
    tools = obj.get("tools")
    tools = tools if isinstance(tools, list) else []
    system, tool_run, rest = ("system", n_sys, "messages", 0), ("tools", len(tools), "tools", 0), \
        ("message", None, "messages", n_sys)
    if getattr(d, "cache_order", "openai") == "template":
        return (system, tool_run, rest), msgs[:n_sys] + tools + msgs[n_sys:]
    return (tool_run, system, rest), tools + msgs


def _anthropic_layout(d: Any, obj: dict[str, Any]) -> tuple[tuple[Any, ...], list[Any]]:
    """An Anthropic body's layout (:func:`_item`) and its cache-view values in order."""
    tools = obj.get("tools")
    tools = tools if isinstance(tools, list) else []
    system = obj.get("system")
    sys_run: tuple[str, int, str, int | None]
    if isinstance(system, list):
        sys_v, sys_run = system, ("system", len(system), "system", 0)
    else:  # one system value is held alone, at /system
        sys_v = [system] if system is not None else []
        sys_run = ("system", len(sys_v), "system", None)
    msgs = obj.get("messages")
    msgs = msgs if isinstance(msgs, list) else []
    return (("tools", len(tools), "tools", 0), sys_run, ("message", None, "messages", 0)), tools + sys_v + msgs


def _item(shape: tuple[Any, ...], i: int, value: Any) -> Item:
    """The item at place ``i`` of a layout: ``shape`` is its runs, each (kind,
    how many: ``None`` for the rest, the body member that holds them, where
    the run starts in that array: ``None`` for a value held alone)."""
    for kind, count, key, first in shape:
        if count is None or i < count:
            return Item(kind, i, (key,) if first is None else (key, first + i), value)
        i -= count
    raise IndexError(i)


def common_prefix(a: Sequence[Any], b: Sequence[Any]) -> int:
    """How many leading elements of two lists (or arrays) are equal: slices
    compared in C, O(log n) Python steps."""
    n = min(len(a), len(b))
    if a[:n] == b[:n]:
        return n
    lo, hi = 0, n  # a[:lo] == b[:lo]; a[:hi] != b[:hi]
    while hi - lo > 1:
        mid = (lo + hi) // 2
        if a[lo:mid] == b[lo:mid]:
            lo = mid
        else:
            hi = mid
    return lo


def shared_values(a: Sequence[Any], b: Sequence[Any], value: Callable[[Any], Any] | None = None) -> int:
    """How many leading elements of ``a`` and ``b`` hold the same JSON
    (``value`` gives an element's JSON value; default: the element): equal
    elements that are not the very same object must also serialise alike
    (``==`` ignores a dict's key order and takes ``1``, ``1.0`` and ``True`` as equal)."""
    k = common_prefix(a, b)
    same = list(map(is_, a[:k], b[:k]))
    i = 0
    while True:  # each run of elements that are not the same objects: one serialisation a side
        try:
            i = same.index(False, i)
        except ValueError:
            return k
        try:
            j = same.index(True, i)
        except ValueError:
            j = k
        xs, ys = (a[i:j], b[i:j]) if value is None else ([value(x) for x in a[i:j]], [value(y) for y in b[i:j]])
        if dumps_value(xs) != dumps_value(ys):
            return i + next(t for t in range(j - i) if dumps_value(xs[t]) != dumps_value(ys[t]))
        i = j


def view_after(dialect: Any, obj: dict[str, Any], prev: FastView | None) -> tuple[FastView, int]:
    """The full cache view of ``obj`` and how many of its leading items equal
    ``prev``'s (:func:`shared_items`); when the layout is ``prev``'s, the
    shared leading items are ``prev``'s own and only the new ones are made."""
    laid = _layout(dialect, obj)
    if laid is None or prev is None or prev.shape != laid[0] or prev.values is None:
        whole = build_view(dialect, obj) if laid is None else \
            _laid_out(dialect.name, _params(obj, laid[2]), laid[3], laid[0], laid[1], False)
        return whole, shared_items(whole.items, prev.items) if prev is not None else 0
    shape, values, keys, normalise = laid
    k = shared_values(values, prev.values)
    # past the shared run, a value that is the very object at the same place
    # of the same layout has the same item (a history re-sent after a changed
    # first message: :mod:`.splice`)
    pv, pi, n = prev.values, prev.items, min(len(prev.values), len(prev.items))
    items = pi[:k] + tuple(pi[i] if i < n and pv[i] is values[i] else _item(shape, i, values[i])
                           for i in range(k, len(values)))
    return FastView(dialect.name, _params(obj, keys), items, normalise, shape, values), k


def shared_items(items: Sequence[Item], prev_items: Sequence[Item]) -> int:
    """How many leading items hold the same JSON and kind as the previous body's."""
    n = min(len(items), len(prev_items))
    k = shared_values([it.value for it in items[:n]], [it.value for it in prev_items[:n]])
    while k and items[k - 1].kind != prev_items[k - 1].kind:  # same value, other role in the view
        k -= 1
    return k


def encode(items: Sequence[Item], prev_items: Sequence[Item] = (), prev_data: Sequence[bytes] = (),
           normalise: Any = None, shared: int | None = None) -> list[bytes]:
    """Each segment's bytes; the leading elements equal to the previous
    body's (:func:`shared_items`), and any later one whose value is the very
    object at the same place there, reuse its bytes (``prev_data``, made
    with the same ``normalise``)."""
    k = shared_items(items, prev_items) if shared is None else shared
    out = list(prev_data[:k])
    n_prev = min(len(prev_items), len(prev_data))
    for i in range(k, len(items)):
        value = items[i].value
        if i < n_prev and prev_items[i].value is value:
            out.append(prev_data[i])
        else:
            out.append(dumps_value(normalise(value) if normalise is not None else value))
    return out


def partition_key(provider: str, model: str, params: bytes, first: bytes | None) -> bytes:
    """16-byte key of the cache partition: requests can share a cache entry
    only when provider, model, the cache-key params and the first segment of
    the cache view agree (docs/scan.md, "Partitioning")."""
    h = hashlib.blake2b(digest_size=16)
    for part in (provider.encode(), model.encode("utf-8", "surrogatepass"), params):
        h.update(len(part).to_bytes(8, "little"))
        h.update(part)
    h.update(b"\x01" + first if first is not None else b"\x00")
    return h.digest()
