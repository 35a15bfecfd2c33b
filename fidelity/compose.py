"""Composition variants: a fork builder (:mod:`fidelity.fork`) then named deltas
on the child's request, defined as data in ``data/fixtures/compositions.toml``
with the outcome the economics tests pin (``expect``). Deltas are pure functions
``(child, parent, **params) -> Request`` registered in :data:`DELTAS`. The
variants: docs/report.md.
"""

from __future__ import annotations

import json
import random
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from functools import cache
from importlib import resources
from pathlib import Path
from typing import Any

from . import fork
from ._registry import Registry
from .errors import InputError, UnknownName
from .jsonio import toml_loads
from .model import FrozenDict, Reasoning, Request, Route, SystemBlock, Text, Tool, ToolCall, freeze, thaw

__all__ = [
    "EXPECTATIONS",
    "DELTAS",
    "Delta",
    "Variant",
    "load_variants",
    "load_variants_from_bytes",
    "variant_names",
    "get_variant",
    "render_sdk",
    "parent_request",
    "parent_requests",
    "system_from_messages",
]

#: Outcomes a variant can declare; the economics tests check each one.
EXPECTATIONS: Mapping[str, str] = {
    "keeps-prefix": "every inheritable token is read from cache (lost = 0)",
    "loses-history": "the head changes ahead of the history: every inherited message is re-prefilled",
    "loses-after-head": "reuse stops in the changed head segment: everything after it is re-prefilled",
    "loses-all": "nothing is read from the parent's cache (another cache key)",
    "no-inheritance": "the child inherits no history (the control)",
    "defect": "a head or history defect breaks the prefix; the differ must name its cause",
    "placement": "only breakpoint caches (Anthropic, DashScope explicit) see it: lost = 0 elsewhere; "
                 "there it reads no more than the Claude Code placement",
}

DeltaFn = Callable[..., Request]
DELTAS: Registry[DeltaFn] = Registry("delta")


def _delta(name: str) -> Callable[[DeltaFn], DeltaFn]:
    def register(fn: DeltaFn) -> DeltaFn:
        DELTAS.add(name, fn)
        return fn

    return register


# -- generated SDK section (Code Mode) ---------------------------------------

_TS_TYPES = {"string": "string", "integer": "number", "number": "number", "boolean": "boolean", "object": "object"}


def _ts_type(schema: Mapping[str, Any]) -> str:
    if "enum" in schema:
        return " | ".join(json.dumps(v, ensure_ascii=False) for v in schema["enum"])
    kind = schema.get("type")
    if kind == "array":
        return f"Array<{_ts_type(schema.get('items') or {})}>"
    if kind == "object" and schema.get("properties"):
        return "{ " + "; ".join(_ts_fields(schema)) + " }"
    return _TS_TYPES.get(str(kind), "unknown")


def _ts_fields(schema: Mapping[str, Any]) -> list[str]:
    required = set(schema.get("required") or ())
    return [f"{key}{'' if key in required else '?'}: {_ts_type(sub)}"
            for key, sub in (schema.get("properties") or {}).items()]


def render_sdk(tools: Sequence[Tool]) -> str:
    """The Code Mode system section: a TypeScript declaration of the visible
    tools, generated from their schemas in tool order (so it changes whenever
    the tool list does)."""
    lines = ["# Code Mode SDK", "Call tools from code through the generated `tools` module:", "", "```ts",
             "declare namespace tools {"]
    for tool in tools:
        summary = (tool.description or "").split(". ")[0].rstrip(".")
        lines.append(f"  /** {summary}. */")
        params = _ts_fields(tool.parameters or {})
        lines.append(f"  function {tool.name}(args: {{ {'; '.join(params)} }}): Promise<string>;" if params
                     else f"  function {tool.name}(): Promise<string>;")
    lines += ["}", "```"]
    return "\n".join(lines)


# -- deltas -------------------------------------------------------------------

def _section_index(request: Request, name: str) -> int:
    for index, block in enumerate(request.system):
        if block.name == name:
            return index
    raise InputError(f"the request has no system section named {name!r}; sections: "
                     + ", ".join(str(b.name) for b in request.system))


def _with_section(child: Request, name: str, **changes: Any) -> Request:
    """``child`` with its system section ``name`` changed by ``changes``."""
    index = _section_index(child, name)
    system = list(child.system)
    system[index] = replace(system[index], **changes)
    return replace(child, system=tuple(system))


def _tool_from(obj: Mapping[str, Any]) -> Tool:
    return Tool(obj["name"], obj.get("description"), freeze(obj.get("parameters")), freeze(obj.get("extra", {})))


@_delta("add_tool")
def add_tool(child: Request, parent: Request, *, tool: Mapping[str, Any], position: str = "end") -> Request:
    """Add a tool schema (``position``: ``end`` or ``start`` of the list)."""
    new = _tool_from(tool)
    tools = (new,) + child.tools if position == "start" else child.tools + (new,)
    return replace(child, tools=tools)


@_delta("add_section")
def add_section(child: Request, parent: Request, *, name: str, text: str, after: str | None = None) -> Request:
    """Add a named system section, after section ``after`` or at the end of
    the system prompt. Either way it sits ahead of every message."""
    block = SystemBlock(text, name=name)
    system = list(child.system)
    at = _section_index(child, after) + 1 if after else len(system)
    # a trailing cache_control breakpoint stays on the last block
    if at == len(system) and system and system[-1].cache_control is not None:
        last = system[-1]
        system[-1] = replace(last, cache_control=None)
        block = replace(block, cache_control=last.cache_control)
    system.insert(at, block)
    return replace(child, system=tuple(system))


@_delta("replace_section")
def replace_section(child: Request, parent: Request, *, name: str, text: str) -> Request:
    """Replace the text of one named system section (a persona)."""
    return _with_section(child, name, text=text)


@_delta("replace_text")
def replace_text(child: Request, parent: Request, *, section: str, old: str, new: str) -> Request:
    """Replace ``old`` by ``new`` inside one system section (a re-rendered
    timestamp, a date, a counter)."""
    block = child.system[_section_index(child, section)]
    if old not in block.text:
        raise InputError(f"section {section!r} does not contain {old!r}")
    return _with_section(child, section, text=block.text.replace(old, new))


@_delta("drop_tools")
def drop_tools(child: Request, parent: Request, *, names: Sequence[str]) -> Request:
    """Drop the named tools (a tool filter); the others keep their order."""
    dropped = set(names)
    return replace(child, tools=tuple(t for t in child.tools if t.name not in dropped))


@_delta("regenerate_sdk")
def regenerate_sdk(child: Request, parent: Request, *, section: str = "code-mode:sdk") -> Request:
    """Regenerate the Code Mode SDK section over the child's visible tools."""
    return _with_section(child, section, text=render_sdk(child.tools))


@_delta("set_route")
def set_route(child: Request, parent: Request, *, model: str, provider: str | None = None) -> Request:
    """Send the child to another model (and optionally provider family)."""
    return replace(child, route=Route(provider or child.route.provider, model))


@_delta("shuffle_tools")
def shuffle_tools(child: Request, parent: Request, *, seed: int = 0) -> Request:
    """Permute the tool list, as a harness that builds it from a hash map
    does; the permutation is seeded, so the defect is reproducible, and is
    never the identity for two or more tools."""
    tools = list(child.tools)
    if len(tools) < 2:
        return child
    order = list(range(len(tools)))
    random.Random(seed).shuffle(order)
    if order == sorted(order):
        order = order[1:] + order[:1]
    return replace(child, tools=tuple(tools[i] for i in order))


def _reversed_keys(value: Any) -> Any:
    if isinstance(value, dict):
        return FrozenDict((k, value[k]) for k in reversed(list(value)))
    return value


@_delta("reorder_schema_keys")
def reorder_schema_keys(child: Request, parent: Request) -> Request:
    """Reverse the top-level key order of every tool's parameter schema
    (``required`` before ``properties`` before ``type``): a schema rebuilt
    from an unordered map. Same JSON value, different bytes."""
    return replace(child, tools=tuple(
        replace(t, parameters=_reversed_keys(t.parameters)) if t.parameters else t for t in child.tools))


@_delta("reorder_argument_keys")
def reorder_argument_keys(child: Request, parent: Request) -> Request:
    """Reverse the key order of every replayed tool call's arguments and
    re-serialise them: a harness that parses the model's argument string into
    a map and writes it back. Same arguments, different bytes."""
    def call(part: Any) -> Any:
        if not isinstance(part, ToolCall) or not isinstance(part.arguments, dict) or len(part.arguments) < 2:
            return part
        args = _reversed_keys(part.arguments)
        return replace(part, arguments=args, arguments_json=json.dumps(thaw(args), ensure_ascii=False))

    return replace(child, messages=tuple(
        replace(m, parts=tuple(call(p) for p in m.parts)) for m in child.messages))


@_delta("drop_reasoning")
def drop_reasoning(child: Request, parent: Request) -> Request:
    """Drop reasoning parts from replayed assistant messages (a harness that
    stores only content and tool calls)."""
    return replace(child, messages=tuple(
        replace(m, parts=tuple(p for p in m.parts if not isinstance(p, Reasoning))) if m.role == "assistant" else m
        for m in child.messages))


# -- variants -----------------------------------------------------------------

@dataclass(frozen=True)
class Delta:
    """One named change with its parameters, in order."""

    op: str
    params: Mapping[str, Any] = field(default_factory=dict)

    def apply(self, child: Request, parent: Request, context: Mapping[str, Any] | None = None) -> Request:
        fn = DELTAS.get(self.op)
        params = {k: _resolve(v, context or {}) for k, v in self.params.items()}
        return fn(child, parent, **params)


def _resolve(value: Any, context: Mapping[str, Any]) -> Any:
    """``"@key"`` strings are looked up in the scoring context (for example
    ``@alt_model``: the provider's alternative model)."""
    if isinstance(value, str) and value.startswith("@"):
        try:
            return context[value[1:]]
        except KeyError:
            raise InputError(f"delta parameter {value!r} needs {value[1:]!r} in the context") from None
    return value


@dataclass(frozen=True)
class Variant:
    """A composition: a fork builder, then deltas, with its documented effect."""

    name: str
    title: str
    builder: str
    deltas: tuple[Delta, ...] = ()
    cache_preserving: bool = False
    expect: str = "keeps-prefix"
    #: the cause kind (:data:`fidelity.diff.causes.KINDS`) a defect must be named by
    cause: str | None = None
    #: the base composition whose faithful child this variant is measured
    #: against (``None``: itself, without deltas)
    baseline: str | None = None
    #: number of sibling children (sibling fan-out); 1 for a single child
    fanout: int = 1
    summary: str = ""
    token_effect: str = ""
    kv_cache_effect: str = ""
    #: the harness's breakpoint placement (:data:`fidelity.breakpoints.PLACEMENTS`)
    #: on the parent's requests and the child's; ``None``: the report's default
    breakpoints: str | None = None

    def base(self, parent: Request, directive: str) -> Request:
        """The builder's child, before any delta."""
        return fork.fork_request(parent, self.builder, directive)

    def apply(self, parent: Request, directive: str, context: Mapping[str, Any] | None = None) -> Request:
        """The child's first request: builder, then every delta in order."""
        child = self.base(parent, directive)
        for delta in self.deltas:
            child = delta.apply(child, parent, context)
        return child

    def children(self, parent: Request, directives: Sequence[str],
                 context: Mapping[str, Any] | None = None) -> tuple[Request, ...]:
        """One child per directive (sibling fan-out of one parent)."""
        return tuple(self.apply(parent, d, context) for d in directives)


def system_from_messages(request: Request) -> Request:
    """``request`` with a single leading text-only ``system`` message moved into
    :attr:`Request.system` (so that system-prompt deltas apply to a Chat body),
    else ``request`` itself; callers check that it renders to the same bytes."""
    if request.system or not request.messages or request.messages[0].role != "system":
        return request
    if len(request.messages) > 1 and request.messages[1].role == "system":
        return request  # two system messages would render as one
    first = request.messages[0]
    if first.extra or not first.parts or not all(isinstance(p, Text) for p in first.parts):
        return request
    blocks = tuple(SystemBlock(p.text, cache_control=p.cache_control) for p in first.parts if isinstance(p, Text))
    return replace(request, system=blocks, messages=request.messages[1:])


def parent_request(history: Request) -> Request:
    """The parent's last request as sent, given its history: a trailing
    assistant message is the response to that request and was never part of
    a prompt the provider cached."""
    messages = history.messages
    if messages and messages[-1].role == "assistant":
        messages = messages[:-1]
    return replace(history, messages=messages)


def parent_requests(history: Request) -> tuple[Request, ...]:
    """Every request the parent sent, in order: the prompt before each assistant
    message, then :func:`parent_request` when the history does not end on one."""
    out = [replace(history, messages=history.messages[:i])
           for i, m in enumerate(history.messages) if m.role == "assistant" and i > 0]
    last = parent_request(history)
    if not out or out[-1].messages != last.messages:
        out.append(last)
    return tuple(out)


_REQUIRED = ("name", "title", "builder")


def _variant_from(obj: Mapping[str, Any], where: str) -> Variant:
    for key in _REQUIRED:
        if not isinstance(obj.get(key), str):
            raise InputError(f"{where}: variant needs a string {key!r}")
    expect = obj.get("expect", "keeps-prefix")
    if expect not in EXPECTATIONS:
        raise InputError(f"{where}: unknown expect {expect!r}; known: {', '.join(EXPECTATIONS)}")
    if obj["builder"] not in fork.names():
        raise UnknownName("fork builder", obj["builder"], fork.names())
    deltas = []
    for d in obj.get("delta", ()):
        params = {k: v for k, v in d.items() if k != "op"}
        DELTAS.get(str(d.get("op")))  # UnknownName lists the known deltas
        deltas.append(Delta(d["op"], params))
    return Variant(
        name=obj["name"], title=obj["title"], builder=obj["builder"], deltas=tuple(deltas),
        cache_preserving=bool(obj.get("cache_preserving", False)), expect=expect, cause=obj.get("cause"),
        baseline=obj.get("baseline"), fanout=int(obj.get("fanout", 1)), summary=obj.get("summary", "").strip(),
        token_effect=obj.get("token_effect", "").strip(), kv_cache_effect=obj.get("kv_cache_effect", "").strip(),
        breakpoints=_placement(obj.get("breakpoints"), where),
    )


def _placement(value: Any, where: str) -> str | None:
    from .breakpoints import PLACEMENTS

    if value is None:
        return None
    if value not in PLACEMENTS:
        raise InputError(f"{where}: unknown breakpoints {value!r}; known: {', '.join(PLACEMENTS)}")
    return str(value)


def load_variants(path: str | Path | None = None) -> tuple[Variant, ...]:
    """Variants from a compositions TOML file (default: the bundled
    ``compositions.toml``), in file order."""
    if path is None:
        data = resources.files("fidelity").joinpath("data/fixtures/compositions.toml").read_bytes()
        return load_variants_from_bytes(data, "compositions.toml")
    if not Path(path).is_file():
        raise InputError("no such compositions file", path=path)
    return load_variants_from_bytes(Path(path).read_bytes(), str(path))


def load_variants_from_bytes(data: bytes, where: str = "compositions.toml") -> tuple[Variant, ...]:
    """Variants from the bytes of a compositions TOML document."""
    doc = toml_loads(data, path=where)
    variants = tuple(_variant_from(v, f"{where} variant {i + 1}") for i, v in enumerate(doc.get("variant", ())))
    names = [v.name for v in variants]
    if len(set(names)) != len(names):
        raise InputError("variant names must be unique", path=where)
    return variants


@cache
def _bundled() -> tuple[Variant, ...]:
    return load_variants()


def variant_names() -> list[str]:
    """Names of the bundled variants, in definition order."""
    return [v.name for v in _bundled()]


def get_variant(name: str) -> Variant:
    """A bundled variant by name; :class:`UnknownName` otherwise."""
    for variant in _bundled():
        if variant.name == name:
            return variant
    raise UnknownName("variant", name, variant_names())
