"""Scripts for the scripted upstream: which request gets which reply. A TOML
or JSON file of ``[defaults]`` and ordered ``[[rule]]`` entries; the first
rule that matches and has uses left answers (docs/proxy.md, "Script format")."""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import orjson

from ..errors import InputError
from ..jsonio import loads as json_loads
from ..jsonio import read_bytes, toml_loads

__all__ = ["Script", "Rule", "Reply", "ToolCall", "load_script", "parse_script", "RequestView"]

_WHEN = ("dialect", "model", "path_contains", "body_contains", "last_contains", "has_tool", "not_contains")
_REPLY = ("text", "tool_calls", "stream", "event_delay_s", "status", "error")


@dataclass(frozen=True)
class ToolCall:
    name: str
    arguments: Any
    id: str | None = None
    #: the Responses API tool namespace the call belongs to (Codex's
    #: ``multi_agent_v1``); other dialects have none and ignore it
    namespace: str | None = None


@dataclass(frozen=True)
class Reply:
    text: str | None = None
    tool_calls: tuple[ToolCall, ...] = ()
    stream: bool | None = None
    event_delay_s: float = 0.0
    status: int = 200
    error: str | None = None


@dataclass
class Rule:
    name: str
    when: dict[str, str]
    reply: Reply
    times: int | None = None
    used: int = 0


@dataclass(frozen=True)
class RequestView:
    """What rules look at: the dialect, model, path, body and its parsed form."""

    dialect: str
    model: str | None
    path: str
    body: bytes
    obj: Any

    def last_turn(self) -> str:
        """The last user turn as JSON text (every string in it): the last
        message / input item / content whose role is ``user`` (harnesses put
        ``system`` entries and tool results after it), else the last item."""
        obj = self.obj if isinstance(self.obj, dict) else {}
        for key in ("messages", "input", "contents"):
            items = obj.get(key)
            if isinstance(items, str):
                return items
            if isinstance(items, list) and items:
                users = [m for m in items if isinstance(m, dict) and m.get("role") == "user"]
                return orjson.dumps(users[-1] if users else items[-1]).decode("utf-8", "replace")
        return ""

    def tool_names(self) -> set[str]:
        obj = self.obj if isinstance(self.obj, dict) else {}
        names: set[str] = set()
        for tool in obj.get("tools") or ():
            if not isinstance(tool, dict):
                continue
            if isinstance(tool.get("name"), str):  # Anthropic, Responses
                names.add(tool["name"])
            if tool.get("type") == "namespace":  # Responses: {"type": "namespace", "name": ns, "tools": [...]}
                for inner in tool.get("tools") or ():
                    if isinstance(inner, dict) and isinstance(inner.get("name"), str):
                        names.add(inner["name"])
            fn = tool.get("function")
            if isinstance(fn, dict) and isinstance(fn.get("name"), str):  # Chat Completions
                names.add(fn["name"])
            for decl in tool.get("functionDeclarations") or tool.get("function_declarations") or ():
                if isinstance(decl, dict) and isinstance(decl.get("name"), str):  # Gemini
                    names.add(decl["name"])
        return names


def _text_in(needle: str, hay: str) -> bool:
    if needle in hay:
        return True
    # the last turn is JSON text: a needle with quotes or newlines appears escaped there
    escaped = orjson.dumps(needle).decode()[1:-1]
    return escaped in hay


@dataclass
class Script:
    rules: list[Rule]
    default: Reply = field(default_factory=lambda: Reply(text="OK"))
    source: str = "<script>"
    _lock: threading.Lock = field(default_factory=threading.Lock, repr=False)

    def reply_for(self, req: RequestView) -> tuple[str, Reply]:
        """``(rule name, reply)`` for a request; uses are counted atomically."""
        with self._lock:
            for rule in self.rules:
                if rule.times is not None and rule.used >= rule.times:
                    continue
                if self._matches(rule, req):
                    rule.used += 1
                    return rule.name, rule.reply
        return "default", self.default

    @staticmethod
    def _matches(rule: Rule, req: RequestView) -> bool:
        w = rule.when
        body_text = req.body.decode("utf-8", "replace")
        checks: dict[str, Callable[[Any], bool]] = {
            "dialect": lambda v: req.dialect == v,
            "model": lambda v: req.model == v,
            "path_contains": lambda v: v in req.path,
            "body_contains": lambda v: _text_in(v, body_text),
            "not_contains": lambda v: not _text_in(v, body_text),
            "last_contains": lambda v: _text_in(v, req.last_turn()),
            "has_tool": lambda v: v in req.tool_names(),
        }
        return all(checks[k](v) for k, v in w.items())


def _reply(obj: Any, where: str, path: str) -> Reply:
    if not isinstance(obj, dict):
        raise InputError("a reply must be a table/object", path=path, pointer=where)
    unknown = set(obj) - set(_REPLY)
    if unknown:
        raise InputError(f"unknown reply key {sorted(unknown)[0]!r} (known: {', '.join(_REPLY)})", path=path,
                         pointer=where)
    calls = []
    for i, c in enumerate(obj.get("tool_calls") or ()):
        if not isinstance(c, dict) or not isinstance(c.get("name"), str):
            raise InputError("a tool call needs a name", path=path, pointer=f"{where}/tool_calls/{i}")
        namespace = c.get("namespace")
        if namespace is not None and not isinstance(namespace, str):
            raise InputError("a tool call's namespace must be a string", path=path,
                             pointer=f"{where}/tool_calls/{i}/namespace")
        calls.append(ToolCall(c["name"], c.get("arguments", {}), c.get("id"), namespace))
    text = obj.get("text")
    if text is not None and not isinstance(text, str):
        raise InputError("reply text must be a string", path=path, pointer=f"{where}/text")
    if text is None and not calls and obj.get("error") is None:
        raise InputError("a reply needs text, tool_calls or error", path=path, pointer=where)
    delay = obj.get("event_delay_s", 0.0)
    if not isinstance(delay, (int, float)) or delay < 0 or delay > 60:
        raise InputError("event_delay_s must be a number of seconds, 0..60", path=path, pointer=f"{where}/event_delay_s")
    status = obj.get("status", 200)
    if not isinstance(status, int) or not 100 <= status <= 599:
        raise InputError("status must be an HTTP status code", path=path, pointer=f"{where}/status")
    stream = obj.get("stream")
    if stream is not None and not isinstance(stream, bool):
        raise InputError("stream must be true or false", path=path, pointer=f"{where}/stream")
    return Reply(text, tuple(calls), stream, float(delay), status, obj.get("error"))


def parse_script(obj: Any, *, path: str = "<script>") -> Script:
    """A :class:`Script` from parsed TOML/JSON; bad input names the key."""
    if not isinstance(obj, dict):
        raise InputError("a script is a table/object with [[rule]] entries", path=path)
    unknown = set(obj) - {"rule", "rules", "defaults"}
    if unknown:
        raise InputError(f"unknown top-level key {sorted(unknown)[0]!r} (known: rule, defaults)", path=path)
    defaults = obj.get("defaults") or {"text": "OK"}
    rules = []
    for i, r in enumerate(obj.get("rule") or obj.get("rules") or ()):
        where = f"/rule/{i}"
        if not isinstance(r, dict):
            raise InputError("a rule must be a table/object", path=path, pointer=where)
        extra = set(r) - {"name", "when", "reply", "times"}
        if extra:
            raise InputError(f"unknown rule key {sorted(extra)[0]!r}", path=path, pointer=where)
        when = r.get("when") or {}
        if not isinstance(when, dict) or set(when) - set(_WHEN):
            bad = sorted(set(when) - set(_WHEN)) if isinstance(when, dict) else ["?"]
            raise InputError(f"unknown condition {bad[0]!r} (known: {', '.join(_WHEN)})", path=path,
                             pointer=f"{where}/when")
        if not all(isinstance(v, str) for v in when.values()):
            raise InputError("conditions take strings", path=path, pointer=f"{where}/when")
        times = r.get("times")
        if times is not None and (not isinstance(times, int) or times < 1):
            raise InputError("times must be a positive integer", path=path, pointer=f"{where}/times")
        rules.append(Rule(str(r.get("name", f"rule{i}")), dict(when), _reply(r.get("reply"), f"{where}/reply", path),
                          times))
    return Script(rules, _reply(defaults, "/defaults", path), path)


def load_script(path: str | Path) -> Script:
    """Read a ``.toml`` or ``.json`` script."""
    data = read_bytes(path)
    if str(path).endswith(".json"):
        obj = json_loads(data, path=path)
    else:
        obj = toml_loads(data, path=path)
    return parse_script(obj, path=str(path))
