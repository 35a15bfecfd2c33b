"""Name the change that broke a cached prefix: :func:`classify` takes both
cache views and the first differing segment and returns the cause kind and,
where the bytes tell, the change (tool added, key order drift, volatile value...)."""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from functools import cached_property
from typing import Any

import orjson

from .. import jsonio
from ..bytediff import first_divergence
from ..errors import InputError
from ..wire import Segment

__all__ = ["KINDS", "Cause", "classify", "params_members", "tool_name"]

KINDS = ("identical", "appended_only", "params_changed", "tools_changed",
         "system_changed", "messages_rewritten")
_BY_SEGMENT = {"params": "params_changed", "tools": "tools_changed",
               "system": "system_changed", "message": "messages_rewritten"}
_RANK = {"params": 0, "tools": 1, "system": 2, "message": 3}


@dataclass(frozen=True)
class Cause:
    """What broke the prefix: ``kind`` (one of :data:`KINDS`) and a one-line
    ``detail``; ``summary`` is computed on first use (importing deepdiff is slow)."""

    kind: str
    detail: str | None = None
    segments: tuple[bytes, bytes] | None = field(default=None, repr=False, compare=False)

    @cached_property
    def summary(self) -> dict[str, Any] | None:
        """deepdiff of the first differing segments: change category -> up to 5 paths."""
        return None if self.segments is None else _deepdiff(*self.segments)


def classify(p: Sequence[Segment], c: Sequence[Segment], split: int | None,
             *, raw_identical: bool = False) -> Cause:
    if split is None:
        detail = None if raw_identical else "bodies differ only in the order of top-level keys the cache does not read in body order"
        return Cause("identical", detail)
    if split >= len(p):
        return Cause("appended_only", f"child appends {len(c) - len(p)} segment(s)")
    a = p[split]
    b = c[split] if split < len(c) else None
    if b is None:
        return Cause(_BY_SEGMENT[a.kind], "child ends early: segment removed", None)
    kind = a.kind if _RANK[a.kind] <= _RANK[b.kind] else b.kind
    pair = (a.data, b.data)
    if kind == "params":
        return Cause("params_changed", _params_detail(a.data, b.data), pair)
    if kind == "tools":
        detail = _tools_detail(p, c, split)
        if detail.startswith(("tool added", "tool removed", "tools replaced", "tools reordered")):
            # the tool lists by name: the first tools of each side are different tools
            # whose schemas have nothing to compare
            # (name -> position: deepdiff names the tools added, removed or moved)
            pair = tuple(orjson.dumps({str(tool_name(side[i].data)): n for n, i in enumerate(_at(side, "tools"))})
                         for side in (p, c))  # type: ignore[assignment]
        return Cause("tools_changed", detail, pair)
    if kind == "system":
        return Cause("system_changed", _text_detail(p, c, split, "system"), pair)
    return Cause("messages_rewritten", _message_detail(p, c, split), pair)


# -- helpers -----------------------------------------------------------------

def _json(data: bytes) -> Any:
    try:
        return json.loads(data)
    except (ValueError, RecursionError):  # not JSON, or nested too deep to compare: no verdict
        return None


def params_members(data: bytes) -> dict[str, Any]:
    """The params segment's ``"key":value`` members (joined by commas, as
    every dialect's cache view writes them) as one object in their order,
    read by the project's one strict JSON reader; ``{}`` when they do not
    parse. The one params reader of the diff (causes, the prompts' cache key)."""
    try:
        value = jsonio.loads(b"{" + data + b"}")
    except InputError:
        return {}
    return value if isinstance(value, dict) else {}


def _params_detail(a: bytes, b: bytes) -> str:
    pa, pb = params_members(a), params_members(b)
    for key in list(pa) + [k for k in pb if k not in pa]:
        if pa.get(key, _MISSING) != pb.get(key, _MISSING):
            return f"{key} changed: {_short(pa.get(key, _MISSING))} → {_short(pb.get(key, _MISSING))}"
    return "parameter key order changed"


def _tool_def(value: Any) -> dict[str, Any] | None:
    """A tool's definition: Chat's ``function`` object, else the tool itself (``None``: not an object)."""
    if not isinstance(value, dict):
        return None
    fn = value.get("function")
    return fn if isinstance(fn, dict) else value


def tool_name(data: bytes) -> str | None:
    name = (_tool_def(_json(data)) or {}).get("name")
    return name if isinstance(name, str) else None


def _at(segs: Sequence[Segment], kind: str) -> list[int]:
    """Where the segments of ``kind`` are in ``segs`` (from ``segs.kinds`` where the
    sequence has it: the scan's segments, whose bytes are read only when named)."""
    kinds = getattr(segs, "kinds", None)
    if kinds is None:
        kinds = [s.kind for s in segs]
    return [i for i, k in enumerate(kinds) if k == kind]


def _tools_detail(p: Sequence[Segment], c: Sequence[Segment], split: int) -> str:
    pn = [tool_name(p[i].data) for i in _at(p, "tools")]
    cn = [tool_name(c[i].data) for i in _at(c, "tools")]
    added = [n for n in cn if n not in pn]
    removed = [n for n in pn if n not in cn]
    if added and not removed:
        return f"tool added: {', '.join(map(str, added))}"
    if removed and not added:
        return f"tool removed: {', '.join(map(str, removed))}"
    if added and removed:
        return f"tools replaced: -{', '.join(map(str, removed))} +{', '.join(map(str, added))}"
    if pn != cn:
        return "tools reordered: " + " ".join(map(str, cn))
    a, b = p[split], c[split]
    name = tool_name(b.data)
    va, vb = _json(a.data), _json(b.data)
    if va == vb:
        return f"key order changed in the schema of tool {name}"
    da, db = _description(va), _description(vb)
    if da != db and _strip_description(va) == _strip_description(vb):
        return f"description changed in tool {name}"
    volatile = _volatile(a.data, b.data)
    if volatile:
        return f"{volatile} in tool {name}"
    return f"schema changed in tool {name}"


def _description(value: Any) -> Any:
    return (_tool_def(value) or {}).get("description")


def _strip_description(value: Any) -> Any:
    if not isinstance(value, dict):
        return value
    if isinstance(value.get("function"), dict):
        return {**value, "function": {k: v for k, v in value["function"].items() if k != "description"}}
    return {k: v for k, v in value.items() if k != "description"}


def _text_detail(p: Sequence[Segment], c: Sequence[Segment], split: int, kind: str) -> str:
    n_p, n_c = len(_at(p, kind)), len(_at(c, kind))
    a, b = p[split], c[split]
    if a.kind != b.kind:
        return f"{kind} section {'added' if n_c > n_p else 'removed'}"
    volatile = _volatile(a.data, b.data)
    if volatile:
        return volatile
    if n_c > n_p:
        return f"{kind} section added"
    if n_c < n_p:
        return f"{kind} section removed"
    return "text edited"


_REASONING_KEYS = (b'"reasoning_content"', b'"type":"thinking"', b'"thought":true', b'"thought": true',
                   b'"type":"reasoning"')


def _message_detail(p: Sequence[Segment], c: Sequence[Segment], split: int) -> str:
    pm, cm = _at(p, "message"), _at(c, "message")
    a, b = p[split], c[split]
    i, at = a.index, f"at {b.pointer}"
    if any(k in a.data for k in _REASONING_KEYS) and not any(k in b.data for k in _REASONING_KEYS):
        return f"reasoning dropped on replay ({at})"
    if i + 1 < len(pm) and p[pm[i + 1]].data == b.data:
        return f"message removed ({at})"
    if i + 1 < len(cm) and c[cm[i + 1]].data == a.data:
        return f"message inserted ({at})"
    va, vb = _json(a.data), _json(b.data)
    if va is not None and va == vb:
        return f"key order changed ({at})"
    if _arguments_equal(va, vb):
        return f"tool-call argument key order changed ({at})"
    volatile = _volatile(a.data, b.data)
    if volatile:
        return f"{volatile} ({at})"
    return f"text edited ({at})"


def _arguments_equal(va: Any, vb: Any) -> bool:
    """True when two messages differ only by key order inside argument
    strings (OpenAI-style ``function.arguments`` JSON text)."""
    def decode(v: Any) -> Any:
        if isinstance(v, dict):
            return {k: (_json(x.encode("utf-8", "surrogatepass")) if k == "arguments" and isinstance(x, str)
                        else decode(x))
                    for k, x in v.items()}
        if isinstance(v, list):
            return [decode(x) for x in v]
        return v
    if va is None or vb is None:
        return False
    return decode(va) == decode(vb) and json.dumps(va) != json.dumps(vb)


_VOLATILE = (
    ("timestamp", re.compile(r"\d{4}-\d{2}-\d{2}(?:[T ]\d{1,2}:\d{2}(?::\d{2}(?:\.\d+)?)?(?:Z|[+-]\d{2}:?\d{2})?)?"
                             r"|\b\d{1,2}:\d{2}(?::\d{2})?\b|\b1[6-9]\d{8}(?:\d{3})?\b")),
    ("UUID", re.compile(r"\b[0-9a-fA-F]{8}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{4}-[0-9a-fA-F]{12}\b")),
    ("duration", re.compile(r"\b\d+(?:\.\d+)?\s?(?:ms|s|sec|secs|seconds|min|minutes|h|hours)\b")),
    ("counter", re.compile(r"\b\d+\b")),
)


def _volatile(a: bytes, b: bytes) -> str | None:
    """Name a volatile value when the first differing span of both sides
    lies inside a timestamp, UUID, duration or counter."""
    at = first_divergence(a, b)
    if at is None:
        return None
    ta, tb = a.decode("utf-8", "replace"), b.decode("utf-8", "replace")
    ca = len(a[:at].decode("utf-8", "replace"))
    for label, pattern in _VOLATILE:
        ma = _match_around(pattern, ta, ca)
        mb = _match_around(pattern, tb, ca)
        if ma and mb and ma != mb:
            return f"volatile value ({label}): {ma!r} → {mb!r}"
    return None


def _match_around(pattern: re.Pattern[str], text: str, at: int) -> str | None:
    lo = max(0, at - 40)
    for m in pattern.finditer(text, lo, at + 40):
        if m.start() <= at <= m.end():
            return m.group()
    return None


def _deepdiff(a: bytes, b: bytes) -> dict[str, Any] | None:
    from deepdiff import DeepDiff  # on demand (see Cause)

    va, vb = _json(a), _json(b)
    if va is None or vb is None:
        return None
    diff = DeepDiff(va, vb, verbose_level=0)
    out: dict[str, Any] = {}
    for key, value in diff.to_dict().items():
        if isinstance(value, dict):
            paths = sorted(value.keys())
        elif isinstance(value, (str, bytes)) or not hasattr(value, "__iter__"):
            paths = [str(value)]
        else:  # a set, a list, or deepdiff's own SetOrdered
            paths = sorted(map(str, value))
        out[key] = [str(x) for x in paths[:5]] + ([f"... {len(paths) - 5} more"] if len(paths) > 5 else [])
    return out or None


_MISSING = object()


def _short(value: Any, width: int = 60) -> str:
    text = "(absent)" if value is _MISSING else json.dumps(value, ensure_ascii=False)
    return text if len(text) <= width else text[: width - 1] + "…"
