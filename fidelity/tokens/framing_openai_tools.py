"""OpenAI function tools and structured output schemas as the model reads
them (the tools and schema parts of :mod:`.framing_openai`'s prompt).

**Tools** are rendered into the system header as a TypeScript namespace::

    # Tools

    ## functions

    namespace functions {

    // Get the weather
    type get_weather = (_: {
    // City name
    location: string,
    unit?: "celsius" | "fahrenheit",
    }) => any;

    } // namespace functions

(Harmony format, "Function calling" and the ``# Tools`` developer
section; the same rendering was measured against the API by
hmarr/openai-chat-tokens, https://github.com/hmarr/openai-chat-tokens,
``src/functions.ts``). Property descriptions become ``//`` comments,
optional properties get ``?``, enums become unions of literals, arrays
``T[]``, nested objects are rendered inline. A model without Harmony
(gpt-4o, gpt-4.1) reads ``name:type``, with no space after the colon: one
token a property fewer, as its recorded usage bills (docs/tokens-billed.md).

**Harmony models** (gpt-5, o-series; not gpt-oss served by others through
its chat template) read one more comment: the ``parameters`` object's own
``description``, before its ``{`` (``type f = (_: // about\n{ ... }) => any;``),
as OpenAI's Harmony renderer writes an object's description
(``openai/harmony``, ``src/encoding.rs``, ``json_schema_to_typescript``:
https://github.com/openai/harmony). That renderer differs from the
rendering above in more places (nested indentation, ``anyOf``, defaults,
titles, a function whose parameters have no properties); only this one is
borne out by recorded usage (``docs/tokens-billed.md``), so only this one is
applied (:func:`render_function` with ``harmony``).

**Structured output schemas** (``response_format`` / ``text.format`` of
type ``json_schema``) are rendered as a ``# Response Formats`` section
holding the schema's JSON (Harmony format, "Structured output"); a
``strict`` schema without the ``required`` and ``additionalProperties``
that strict mode implies (:func:`strict_schema`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence  # not typing.Mapping: its isinstance check is several times slower
from typing import Any

import orjson

from ._pieces import Piece

__all__ = ["render_type", "function_of", "render_function", "render_namespace", "render_tools", "TOOLS_HEAD",
           "TOOLS_TAIL", "schema_pieces", "strict_schema"]


# ------------------------------------------------------------------ tools

def render_type(schema: Any, indent: str = "", colon: str = ": ") -> str:
    """A JSON schema as the TypeScript-like type the model reads (``colon``
    between a property's name and its type)."""
    if not isinstance(schema, Mapping):
        return "any"
    if "enum" in schema and isinstance(schema["enum"], list):
        return " | ".join(orjson.dumps(v).decode() for v in schema["enum"]) or "never"
    if "const" in schema:
        return orjson.dumps(schema["const"]).decode()
    for key in ("anyOf", "oneOf"):
        if isinstance(schema.get(key), list):
            return " | ".join(render_type(s, indent, colon) for s in schema[key]) or "any"
    t = schema.get("type")
    if isinstance(t, list):
        return " | ".join(render_type({**schema, "type": x}, indent, colon) for x in t)
    if t == "array":
        inner = render_type(schema.get("items"), indent, colon)
        return f"({inner})[]" if " | " in inner else f"{inner}[]"
    if t == "object" or "properties" in schema:
        props = schema.get("properties")
        if not isinstance(props, Mapping) or not props:
            return "object"
        return "{\n" + _render_props(schema, indent, colon) + indent + "}"
    if t in ("integer", "number"):
        return "number"
    if t in ("string", "boolean", "null"):
        return str(t)
    return "any"


def _render_props(schema: Mapping[str, Any], indent: str = "", colon: str = ": ") -> str:
    props = schema.get("properties") or {}
    required = schema.get("required")
    required = required if isinstance(required, list) else []
    out = []
    for name, sub in props.items():
        if isinstance(sub, Mapping) and isinstance(sub.get("description"), str):
            out.append(f"{indent}// {sub['description']}\n")
        opt = "" if name in required else "?"
        out.append(f"{indent}{name}{opt}{colon}{render_type(sub, indent, colon)},\n")
    return "".join(out)


def function_of(tool: Any) -> Mapping[str, Any] | None:
    """The function object of a Chat (``{"type":"function","function":{...}}``)
    or Responses (``{"type":"function","name",...}``) tool; ``None`` for
    built-in tools."""
    if not isinstance(tool, Mapping):
        return None
    fn = tool.get("function")
    if isinstance(fn, Mapping):
        return fn
    if tool.get("type") in ("function", None) and isinstance(tool.get("name"), str):
        return tool
    return None


def render_function(fn: Mapping[str, Any], harmony: bool = False, spaced: bool = True) -> str:
    """One function in the ``namespace functions`` block; ``harmony``: as
    OpenAI's own Harmony models read it (the parameters' own description
    is a comment before their ``{``: module docstring); ``spaced``: a space
    after each property's colon (not for models without Harmony: module docstring)."""
    out = ""
    desc = fn.get("description")
    if isinstance(desc, str) and desc:
        out += f"// {desc}\n"  # one prefix; a multi-line description keeps its lines as they are
    params = fn.get("parameters")
    name = fn.get("name", "")
    if isinstance(params, Mapping) and isinstance(params.get("properties"), Mapping) and params["properties"]:
        about = params.get("description")
        note = f"// {about}\n" if harmony and isinstance(about, str) else ""
        out += f"type {name} = (_: {note}{{\n{_render_props(params, colon=': ' if spaced else ':')}}}) => any;\n\n"
    else:
        out += f"type {name} = () => any;\n\n"
    return out


def render_namespace(tool: Mapping[str, Any]) -> str:
    """A Responses ``namespace`` tool (function tools grouped under a name,
    as Codex CLI sends ``multi_agent_v1``) as its own section of the tools
    header, in the form the Harmony format gives a named tool namespace
    (``## name``, its description, ``namespace name { ... }``:
    https://cookbook.openai.com/articles/openai-harmony, "Tools"); ``""``
    for anything else."""
    if tool.get("type") != "namespace" or not isinstance(tool.get("name"), str):
        return ""
    name, desc = tool["name"], tool.get("description")
    inner = [f for f in (function_of(t) for t in tool.get("tools") or ()) if f is not None]
    head = f"## {name}\n\n" + (f"// {desc}\n" if isinstance(desc, str) and desc else "")
    return head + f"namespace {name} {{\n\n" + "".join(render_function(f) for f in inner) + f"}} // namespace {name}\n\n"


TOOLS_HEAD = "# Tools\n\n## functions\n\nnamespace functions {\n\n"
TOOLS_TAIL = "} // namespace functions"


def render_tools(tools: Sequence[Any]) -> str:
    """The whole tools section for function tools (built-ins left out)."""
    fns = [f for f in (function_of(t) for t in tools) if f is not None]
    if not fns:
        return ""
    return TOOLS_HEAD + "".join(render_function(f) for f in fns) + TOOLS_TAIL



# ------------------------------------------------------------------ schemas

def schema_pieces(fmt: Any) -> list[Piece]:
    """A ``json_schema`` response format as its ``# Response Formats`` section."""
    if not isinstance(fmt, Mapping) or fmt.get("type") != "json_schema":
        return []
    inner = fmt.get("json_schema")
    inner = inner if isinstance(inner, Mapping) else fmt
    schema = inner.get("schema")
    if inner.get("strict") is True:
        schema = strict_schema(schema)
    name = inner.get("name", "response")
    text = f"# Response Formats\n\n## {name}\n\n"
    if isinstance(inner.get("description"), str):
        text += f"// {inner['description']}\n"
    return [text + orjson.dumps(schema).decode()]


#: schema keywords a strict schema implies (every property required, no
#: other properties: https://platform.openai.com/docs/guides/structured-outputs,
#: "Supported schemas"), so they are not part of what the model reads
_IMPLIED = frozenset({"required", "additionalProperties"})
_SUBSCHEMA_MAPS = ("properties", "$defs", "definitions", "patternProperties")
_SUBSCHEMA_LISTS = ("anyOf", "oneOf", "allOf", "prefixItems")


def strict_schema(schema: Any) -> Any:
    """A strict ``json_schema`` as the model reads it: ``required`` and
    ``additionalProperties`` left out at every schema node (they are implied),
    everything else in its order. Only schema keywords are touched: a
    property *named* ``required`` stays (docs/tokens-billed.md, "Strict
    schemas")."""
    if not isinstance(schema, Mapping):
        return schema
    out: dict[str, Any] = {}
    for key, value in schema.items():
        if key in _IMPLIED:
            continue
        if key in _SUBSCHEMA_MAPS and isinstance(value, Mapping):
            out[key] = {k: strict_schema(v) for k, v in value.items()}
        elif key in _SUBSCHEMA_LISTS and isinstance(value, list):
            out[key] = [strict_schema(v) for v in value]
        elif key in ("items", "not", "if", "then", "else") and isinstance(value, Mapping):
            out[key] = strict_schema(value)
        else:
            out[key] = value
    return out
