"""OpenAI prompts as the model reads them: message framing, tool definitions
in their TypeScript-like rendering, response schemas, media by rule.

OpenAI bills the prompt the model reads, not the JSON body. What it reads:

* **Messages** are framed by special tokens, ``<|start|>{role}<|message|>
  {content}<|end|>``, three tokens plus the role around each message, and
  every reply is primed with ``<|start|>assistant<|message|>`` (three
  tokens). Sources: OpenAI cookbook "How to count tokens with tiktoken"
  (https://cookbook.openai.com/examples/how_to_count_tokens_with_tiktoken,
  ``num_tokens_from_messages``: ``tokens_per_message = 3``, one per
  ``name``, "every reply is primed with <|start|>assistant<|message|>");
  the Harmony format (https://cookbook.openai.com/articles/openai-harmony)
  names the tokens (``<|start|>`` 200006, ``<|end|>`` 200007,
  ``<|message|>`` 200008 in o200k).
* **Tools** are rendered into the system header as a TypeScript namespace::

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
  ``T[]``, nested objects are rendered inline.
* **Structured output schemas** (``response_format`` / ``text.format`` of
  type ``json_schema``) are rendered as a ``# Response Formats`` section
  holding the schema's JSON (Harmony format, "Structured output"); a
  ``strict`` schema without the ``required`` and ``additionalProperties``
  that strict mode implies (:func:`strict_schema`).
* **Chat Completions' tools block**: a Harmony model's function tools on
  OpenAI's own Chat Completions cost a fixed block more than the same tools
  on the Responses API (:data:`CHAT_TOOLS_BLOCK`, fitted: its text is not
  published).
* **gpt-oss**, served by others through its chat template, reads the
  Harmony system message the template writes (:data:`GPT_OSS_SYSTEM`).
* **Claude and Gemini models in an OpenAI-shaped body** (OpenRouter, the
  Hugging Face router, Gemini's OpenAI-compatible endpoint) are billed as
  their own provider renders the conversation: each segment is counted by
  that provider's estimate (:func:`estimate_family`).
* **Tool calls and results**: an assistant call is a message to
  ``functions.{name}`` whose content is the arguments; a result is a message
  from the tool (Harmony format, "Receiving tool calls", "Handling tool
  calls").
* **Reasoning items** replayed in a Responses ``input`` are billed only
  while their tool-calling turn continues (OpenAI reasoning guide,
  https://platform.openai.com/docs/guides/reasoning, "Keeping reasoning
  items in context"); their content is encrypted, so their size is
  estimated from the length of ``encrypted_content``:
  ``0.2105 * len - 225`` reasoning tokens plus 12 for the item's framing,
  fitted on the five reasoning items of two recordings whose earlier
  response reported its ``reasoning_tokens`` (45, 98, 196, 63 and 1792
  tokens; fitted on all five, so no held-out figure: see
  ``docs/tokens-billed.md``). Counts that include one are ``estimated``.
* **Reasoning models** (gpt-5, o-series, gpt-oss) read the Harmony format
  itself: a tool call is ``<|start|>assistant<|channel|>commentary
  to=functions.{name}<|message|>{arguments}<|call|>`` and its result
  ``<|start|>functions.{name} to=assistant<|message|>{output}<|end|>`` (the
  article's form less the ``<|constrain|>json`` and result-channel tokens,
  which the recorded usage does not show being billed); other models get
  the shorter form above.

Constants that the sources leave open (the extra tokens around tool calls,
the tools block) were set against recorded usage (``docs/tokens-billed.md``).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence  # not typing.Mapping: its isinstance check is several times slower
from functools import lru_cache
from typing import Any

import orjson

from ..wire import Segment
from ._pieces import Media, Piece, Special
from .media import decode_data_url

__all__ = ["segment_pieces", "one_segment_pieces", "call_names", "call_pairs", "function_of", "render_tools", "render_type",
           "strict_schema", "chat_tools_block", "estimate_family", "START", "END", "MESSAGE"]

#: o200k_base special tokens of the chat format (Harmony format article)
START, END, MESSAGE = Special(200006), Special(200007), Special(200008)
CHANNEL, CONSTRAIN, CALL = Special(200005), Special(200003), Special(200012)

#: fitted: reasoning tokens per character of ``encrypted_content``, offset, framing
REASONING_SLOPE, REASONING_OFFSET, REASONING_FRAME = 0.2105, -225, 12


def reasoning_tokens(encrypted_chars: int) -> int:
    """Billed tokens of one replayed reasoning item (module docstring)."""
    return max(0, round(REASONING_SLOPE * encrypted_chars + REASONING_OFFSET)) + REASONING_FRAME


def harmony(model: str) -> bool:
    """Models that read the Harmony format (gpt-5, o-series, gpt-oss)."""
    key = model.strip().lower().rsplit("/", 1)[-1]
    return key.startswith(("gpt-5", "o1", "o3", "o4", "gpt-oss", "codex"))


def open_weight_harmony(model: str) -> bool:
    """gpt-oss: served by others (Groq, OpenRouter, vLLM) through its chat
    template, which writes the Harmony system message itself."""
    return model.strip().lower().rsplit("/", 1)[-1].startswith("gpt-oss")


#: the system message gpt-oss's chat template writes (Harmony format article,
#: "System message format"; the date's digits tokenize alike for any date)
GPT_OSS_SYSTEM = ("You are ChatGPT, a large language model trained by OpenAI.\n"
                  "Knowledge cutoff: 2024-06\nCurrent date: 2025-06-28\n\nReasoning: {effort}\n\n"
                  "# Valid channels: analysis, commentary, final. Channel must be included for every message.")


def gpt_oss_system(params: Mapping[str, Any]) -> list[Piece]:
    """The system message of a gpt-oss prompt, with the request's reasoning effort."""
    effort = params.get("reasoning_effort")
    reasoning = params.get("reasoning")
    if not isinstance(effort, str) and isinstance(reasoning, Mapping):
        effort = reasoning.get("effort")
    effort = effort if effort in ("low", "medium", "high") else "medium"
    return [START, "system", MESSAGE, GPT_OSS_SYSTEM.format(effort=effort), END]


def call_pieces(name: str, arguments: str, model: str) -> list[Piece]:
    if harmony(model):
        return [START, "assistant", CHANNEL, "commentary to=functions." + name, MESSAGE, arguments, CALL]
    return [START, "assistant to=functions." + name, MESSAGE, arguments, END]


def output_pieces(name: str | None, output: list[Piece], model: str) -> list[Piece]:
    if harmony(model) and name:
        return [START, "functions." + name + " to=assistant", MESSAGE, *output, END]
    return [START, "tool", MESSAGE, *output, END]
#: reply priming: ``<|start|>assistant<|message|>``
PRIMING: tuple[Piece, ...] = (START, "assistant", MESSAGE)


@lru_cache(maxsize=1024)
def estimate_family(model: str) -> str | None:
    """``"anthropic"`` or ``"gemini"`` for a Claude or Gemini model named in an
    OpenAI-shaped body (OpenRouter's ``anthropic/claude-sonnet-4.5``, the
    Hugging Face router, Gemini's OpenAI-compatible endpoint), else ``None``.
    Such a body is billed as the model's own provider renders it, not as
    OpenAI's chat format: its segments are counted by that provider's
    calibrated estimate (:mod:`.framing_estimate`), the model being resolved
    by the one rule, :func:`fidelity.tokens.for_model`."""
    from . import for_model

    name = for_model(model, nearest=True).name
    return {"claude-estimate": "anthropic", "gemini-estimate": "gemini"}.get(name)


#: fitted: tokens Chat Completions adds for a Harmony model (gpt-5.x,
#: o-series) when the request declares function tools; the same requests on
#: the Responses API do not carry them (docs/tokens-billed.md, "Chat tools block")
CHAT_TOOLS_BLOCK = 81
#: stand-in ids of those tokens (below every special token, above media stand-ins)
_BLOCK_BASE = -(1 << 18)


def chat_tools_block(model: str, chat: bool) -> list[Piece]:
    """:data:`CHAT_TOOLS_BLOCK` stand-in specials for a Harmony model's tools
    on OpenAI's own Chat Completions (``chat``); none otherwise. A model named
    with its organisation (``openai/gpt-5-mini``) is a gateway's (OpenRouter's)
    name: the gateway's call to OpenAI did not carry the block."""
    if not chat or not harmony(model) or "/" in model:
        return []
    return [Special(_BLOCK_BASE - i) for i in range(CHAT_TOOLS_BLOCK)]


def _loads(data: bytes) -> Any:
    try:
        return orjson.loads(data)
    except orjson.JSONDecodeError:
        return None


# ------------------------------------------------------------------ tools

def render_type(schema: Any, indent: str = "") -> str:
    """A JSON schema as the TypeScript-like type the model reads."""
    if not isinstance(schema, Mapping):
        return "any"
    if "enum" in schema and isinstance(schema["enum"], list):
        return " | ".join(orjson.dumps(v).decode() for v in schema["enum"]) or "never"
    if "const" in schema:
        return orjson.dumps(schema["const"]).decode()
    for key in ("anyOf", "oneOf"):
        if isinstance(schema.get(key), list):
            return " | ".join(render_type(s, indent) for s in schema[key]) or "any"
    t = schema.get("type")
    if isinstance(t, list):
        return " | ".join(render_type({**schema, "type": x}, indent) for x in t)
    if t == "array":
        inner = render_type(schema.get("items"), indent)
        return f"({inner})[]" if " | " in inner else f"{inner}[]"
    if t == "object" or "properties" in schema:
        props = schema.get("properties")
        if not isinstance(props, Mapping) or not props:
            return "object"
        return "{\n" + _render_props(schema, indent) + indent + "}"
    if t in ("integer", "number"):
        return "number"
    if t in ("string", "boolean", "null"):
        return str(t)
    return "any"


def _render_props(schema: Mapping[str, Any], indent: str = "") -> str:
    props = schema.get("properties") or {}
    required = schema.get("required")
    required = required if isinstance(required, list) else []
    out = []
    for name, sub in props.items():
        if isinstance(sub, Mapping) and isinstance(sub.get("description"), str):
            out.append(f"{indent}// {sub['description']}\n")
        opt = "" if name in required else "?"
        out.append(f"{indent}{name}{opt}: {render_type(sub, indent)},\n")
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


def render_function(fn: Mapping[str, Any]) -> str:
    """One function in the ``namespace functions`` block."""
    out = ""
    desc = fn.get("description")
    if isinstance(desc, str) and desc:
        out += f"// {desc}\n"  # one prefix; a multi-line description keeps its lines as they are
    params = fn.get("parameters")
    name = fn.get("name", "")
    if isinstance(params, Mapping) and isinstance(params.get("properties"), Mapping) and params["properties"]:
        out += f"type {name} = (_: {{\n{_render_props(params)}}}) => any;\n\n"
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


# ------------------------------------------------------------------ content

def _media_of_part(part: Mapping[str, Any]) -> Media | None:
    t = part.get("type")
    if t in ("image_url", "input_image"):
        img = part.get("image_url")
        url = img.get("url") if isinstance(img, Mapping) else img
        detail = (img.get("detail") if isinstance(img, Mapping) else None) or part.get("detail")
        if not isinstance(url, str):
            return Media("image", url=str(part.get("file_id") or ""), detail=detail)
        return _media_from_url("image", url, detail)
    if t in ("file", "input_file"):
        f = part.get("file")
        f = f if isinstance(f, Mapping) else part
        data = f.get("file_data")
        if isinstance(data, str):
            got = _media_from_url("pdf", data if data.startswith("data:") else "data:application/pdf;base64," + data)
            return Media(got.kind, got.data, got.mime, got.url, got.detail, part=str(t))
        return Media("pdf", url=str(f.get("file_url") or f.get("file_id") or ""), part=str(t))
    if t == "input_audio":
        a = part.get("input_audio") if isinstance(part.get("input_audio"), Mapping) else {}
        fmt = a.get("format") if isinstance(a, Mapping) else None
        data = a.get("data") if isinstance(a, Mapping) else None
        if isinstance(data, str):
            return Media("audio", data=data.encode(), mime=f"audio/{fmt or 'wav'}")
        return Media("audio")
    return None


def _media_from_url(kind: str, url: str, detail: str | None = None) -> Media:
    d = decode_data_url(url)
    if d is None:
        return Media(kind, url=url, detail=detail)
    mime, payload = d
    return Media(kind if kind != "image" or not (mime or "").endswith("pdf") else "pdf",
                 data=payload.encode("ascii", "replace"), mime=mime, detail=detail)


def content_pieces(content: Any) -> list[Piece]:
    """Text and media of a message's ``content`` (string, parts, or null)."""
    if isinstance(content, str):
        return [content]
    out: list[Piece] = []
    if isinstance(content, list):
        for part in content:
            if isinstance(part, str):
                out.append(part)
            elif isinstance(part, Mapping):
                text = part.get("text")
                if isinstance(text, str) and part.get("type") in ("text", "input_text", "output_text", None):
                    out.append(text)
                    continue
                media = _media_of_part(part)
                if media is not None:
                    out.append(media)
                elif isinstance(part.get("refusal"), str):
                    out.append(part["refusal"])
    return out


def message_pieces(msg: Any, model: str = "", names: Mapping[str, str] | None = None) -> list[Piece]:
    """One Chat message or Responses input item, framed; ``names`` maps tool
    call ids to function names (a result names its function in Harmony)."""
    names = names or {}
    if not isinstance(msg, Mapping):
        return [orjson.dumps(msg).decode()] if msg is not None else []
    t = msg.get("type")
    if t == "function_call":
        return call_pieces(str(msg.get("name", "")), str(msg.get("arguments", "")), model)
    if t == "function_call_output":
        out = msg.get("output")
        return output_pieces(names.get(str(msg.get("call_id"))),
                             content_pieces(out) if not isinstance(out, str) else [out], model)
    if t == "reasoning":
        enc = msg.get("encrypted_content")
        if isinstance(enc, str) and enc:
            return [Media("reasoning", data=enc.encode("ascii", "replace"))]
        return []  # not replayed with its content: nothing the model reads
    if t not in (None, "message"):
        return []  # built-in tool items (web search, code interpreter): not rendered here
    role = str(msg.get("role", "user"))
    if role == "tool":
        return output_pieces(names.get(str(msg.get("tool_call_id"))), content_pieces(msg.get("content")), model)
    pieces: list[Piece] = [START, role]
    if isinstance(msg.get("name"), str):
        pieces.append(msg["name"])
    pieces.append(MESSAGE)
    pieces.extend(content_pieces(msg.get("content")))
    pieces.append(END)
    calls = msg.get("tool_calls")
    for call in calls if isinstance(calls, list) else ():  # another type: not calls (bad input must not crash)
        fn = call.get("function") if isinstance(call, Mapping) else None
        if isinstance(fn, Mapping):
            pieces += call_pieces(str(fn.get("name", "")), str(fn.get("arguments", "")), model)
    return pieces


def call_names(values: Sequence[Any]) -> dict[str, str]:
    """Tool call id -> function name, over Chat messages and Responses items
    (a later call with the same id wins)."""
    out: dict[str, str] = {}
    for v in values:
        if isinstance(v, dict) or isinstance(v, Mapping):
            pairs = call_pairs(v)
            if pairs:
                out.update(pairs)
    return out


def call_pairs(v: Any) -> list[tuple[str, str]]:
    """The ``(call id, function name)`` pairs one Chat message or Responses
    item adds to :func:`call_names`, in order (``fidelity scan`` keeps them
    per element)."""
    out: list[tuple[str, str]] = []
    if not isinstance(v, dict) and not isinstance(v, Mapping):
        return out
    if v.get("type") == "function_call" and isinstance(v.get("name"), str):
        out.append((str(v.get("call_id")), v["name"]))
    calls = v.get("tool_calls")
    for call in calls if isinstance(calls, list) else ():
        if isinstance(call, dict) or isinstance(call, Mapping):
            fn = call.get("function")
            if isinstance(fn, dict) or isinstance(fn, Mapping):
                out.append((str(call.get("id")), str(fn.get("name", ""))))
    return out


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
    property *named* ``required`` stays (measured on the fit side: strict
    schemas are billed about that much smaller, docs/tokens-billed.md)."""
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


# ------------------------------------------------------------------ segments

def segment_pieces(dialect: str, segs: Sequence[Segment], model: str = "") -> list[list[Piece]]:
    """Pieces of each segment of an ``openai-chat`` / ``openai-responses``
    cache view. Their token counts plus the reply priming (:data:`PRIMING`,
    which belongs to no segment: a child's next message starts where it
    stands) sum to the billed prompt."""
    tool_idx = [i for i, s in enumerate(segs) if s.kind == "tools"]
    tools = [_loads(segs[i].data) for i in tool_idx]
    functions = [i for i, t in zip(tool_idx, tools) if function_of(t) is not None]
    values = [_loads(s.data) if s.kind in ("system", "message") else None for s in segs]
    names = call_names(values)
    return [one_segment_pieces(seg, values[i], model, names, bool(functions) and i == functions[0],
                               bool(functions) and i == functions[-1]) for i, seg in enumerate(segs)]


def one_segment_pieces(seg: Segment, value: Any, model: str, names: Mapping[str, str],
                       first_function: bool, last_function: bool) -> list[Piece]:
    """Pieces of one segment of :func:`segment_pieces`: ``value`` is the
    parsed segment (system and message segments); the tools block's head
    and tail go with the first and last function tool; ``names`` (call id
    -> function name over the whole view) is read only by a tool result,
    through ``names.get(str(call_id))`` / ``names.get(str(tool_call_id))``."""
    family = estimate_family(model)
    if family is not None:
        return _estimated_pieces(family, seg, value, model, first_function)
    pieces: list[Piece] = []
    if seg.kind == "params":
        params = _loads(b"{" + seg.data + b"}") if seg.data else {}
        if open_weight_harmony(model):
            pieces += gpt_oss_system(params if isinstance(params, Mapping) else {})
        if isinstance(params, Mapping):
            pieces += schema_pieces(params.get("response_format"))
            text = params.get("text")
            if isinstance(text, Mapping):
                pieces += schema_pieces(text.get("format"))
    elif seg.kind == "tools":
        tool = _loads(seg.data)
        fn = function_of(tool)
        if isinstance(tool, Mapping) and tool.get("type") == "namespace":
            pieces.append(render_namespace(tool))
        elif fn is not None:
            if first_function:
                pieces.append(TOOLS_HEAD)
            pieces.append(render_function(fn))
            if last_function:
                pieces.append(TOOLS_TAIL)
                # a Chat Completions tool nests its function (Responses tools are flat)
                pieces += chat_tools_block(model, isinstance(tool, Mapping) and isinstance(tool.get("function"), Mapping))
    else:
        if seg.pointer in ("/instructions",):
            pieces += [START, "developer", MESSAGE, *content_pieces(value), END]
        elif seg.pointer == "/input":
            pieces += [START, "user", MESSAGE, *content_pieces(value), END]
        else:
            pieces += message_pieces(value, model, names)
    return pieces


def _media_of_value(value: Any) -> Media | None:
    return _media_of_part(value) if isinstance(value, Mapping) else None


def _estimated_pieces(provider: str, seg: Segment, value: Any, model: str, first_tool: bool) -> list[Piece]:
    """One segment of an OpenAI-shaped body for a Claude or Gemini model, as
    that provider's estimate counts it: a function tool as the provider's own
    tool object (name, description, input schema), a response schema as its
    JSON, messages by the text the model reads."""
    from . import framing_estimate

    if seg.kind == "tools":
        fn = function_of(_loads(seg.data))
        if fn is None:
            return []
        tool = {k: v for k, v in (("name", fn.get("name")), ("description", fn.get("description")),
                                  ("input_schema", fn.get("parameters"))) if v is not None}
        return framing_estimate.one_segment_pieces(provider, seg, model, _media_of_value, {}, first_tool, value=tool)
    if seg.kind == "params":
        pieces = framing_estimate.one_segment_pieces(provider, seg, model, _media_of_value, {}, False)
        params = _loads(b"{" + seg.data + b"}") if seg.data else {}
        if isinstance(params, Mapping):
            for fmt in (params.get("response_format"), (params.get("text") or {}).get("format")
                        if isinstance(params.get("text"), Mapping) else None):
                inner = fmt.get("json_schema") if isinstance(fmt, Mapping) else None
                inner = inner if isinstance(inner, Mapping) else fmt
                if isinstance(fmt, Mapping) and fmt.get("type") == "json_schema" and isinstance(inner, Mapping):
                    pieces.append(orjson.dumps(inner.get("schema")).decode())
        return pieces
    if value is None:
        value = _loads(seg.data)
    return framing_estimate.one_segment_pieces(provider, seg, model, _media_of_value, {}, False, value=value)
