"""Claude and Gemini prompts for the calibrated estimate.

Neither Anthropic nor Google publishes a tokenizer, so these counts are
estimates. A prompt is read as the model reads it, not as its JSON body: the
text of each block, tool arguments and definitions as compact JSON, media by
rule (:mod:`.media`), plus fixed counts per turn, system block, tool,
``tool_use``/``tool_result`` block, document and request (:data:`CONSTANTS`,
fitted by :mod:`fidelity.tokens.fit`) and Anthropic's tool-use system prompt.
Each rule, its source and the fitted and held-out figures:
``docs/tokens-billed.md``, "Claude and Gemini: calibrated estimates".
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from typing import Any

import orjson

from ..wire import Segment
from ._pieces import Piece, Special

__all__ = ["CONSTANTS", "TOOL_PROMPT_RECORDED", "claude_version", "anthropic_tool_prompt", "segment_pieces",
           "one_segment_pieces", "params_value", "message_block_pieces", "MSG", "TOOL", "THINK", "BASE", "DOC",
           "ADAPT", "SCHEMA", "CALL", "SYSTEM", "SIGNATURE", "GEMINI_SIGNATURE_CHARS",
           "signature_tokens", "current_turn_start", "table_of", "NEW_TOKENIZER", "DOCUMENT", "schema_text"]

#: stand-in special ids per overhead kind (one id per token of overhead)
MSG, TOOL, THINK, BASE, DOC = Special(-101), Special(-102), Special(-103), Special(-104), Special(-105)
ADAPT, SCHEMA, CALL, SYSTEM = Special(-106), Special(-107), Special(-108), Special(-109)
SIGNATURE, DOCUMENT = Special(-110), Special(-111)

#: base64 characters per billed token of a billed Gemini thought signature
#: (measured on the fit side: docs/tokens-billed.md, "Gemini thought signatures")
GEMINI_SIGNATURE_CHARS = 4.9

#: whole tokens per message, tool, extended thinking, request... per table
#: (:func:`table_of`), fitted by :mod:`fidelity.tokens.fit`
CONSTANTS: dict[str, dict[str, float]] = {
    "anthropic": {"message": 3.0, "tool": 2.0, "thinking": 29.0, "adaptive": 17.0, "schema": 86.0, "call": 13.0,
                  "system": 1.0, "document": 37.0, "base": 4.0},
    "anthropic-4.7": {"message": 1.0, "tool": 0.0, "thinking": 29.0, "adaptive": 17.0, "schema": 86.0, "call": 1.0,
                      "system": 0.0, "document": 37.0, "base": 6.0},
    "gemini": {"message": 1.0, "tool": 0.0, "thinking": 0.0, "adaptive": 0.0, "schema": 0.0, "call": 0.0,
               "system": 1.0, "document": 0.0, "base": 0.0},
    "gemini-2.0": {"message": 0.0, "tool": 0.0, "thinking": 0.0, "adaptive": 0.0, "schema": 0.0, "call": 0.0,
                   "system": 0.0, "document": 0.0, "base": 0.0},
}

#: keys whose string values the model does not read as text
_SKIP_KEYS = frozenset({"type", "role", "id", "tool_use_id", "signature", "cache_control", "media_type",
                        "mimeType", "mime_type", "thoughtSignature", "thought_signature", "citations",
                        "encrypted_content", "data"})


#: the tool-use system prompt of Claude 4.5 and later as recorded usage bills
#: it, ``(auto or none, any or tool)`` (docs/tokens-billed.md)
TOOL_PROMPT_RECORDED = (497, 597)

_NEW_STYLE = re.compile(r"claude-[a-z]+-(\d+)(?:[-.](\d)(?!\d))?")
_OLD_STYLE = re.compile(r"claude-(\d+)(?:[-.](\d)(?!\d))?-([a-z]+)")


def claude_version(model: str) -> tuple[int, int] | None:
    """``(major, minor)`` of a Claude model id, in either naming
    (``claude-sonnet-4-5-20250929``, ``claude-3-5-haiku-latest``,
    ``anthropic/claude-opus-4.7``), ``None`` when the id names none."""
    key = model.lower()
    m = _OLD_STYLE.search(key) or _NEW_STYLE.search(key)
    if m is None:
        return None
    return int(m.group(1)), int(m.group(2) or 0)


#: the first Claude version of the tokenizer generation Anthropic introduced
#: with Opus 4.7 ("uses a new tokenizer", up to 35 % more tokens for the same
#: text: https://platform.claude.com/docs/en/about-claude/models/whats-new-claude-4-7)
NEW_TOKENIZER = (4, 7)


#: Gemini 1.0, 1.5 and 2.0 ids (``gemini-2.0-flash``, ``models/gemini-1.5-pro-002``,
#: ``gemini-pro``): recorded usage bills their text with no per-turn or
#: system-instruction token, where 2.5 and later bill one each
#: (docs/tokens-billed.md, "Gemini generations")
_GEMINI_EARLY = re.compile(r"gemini-(?:1\.0|1\.5|2\.0)|gemini-pro(?:-vision)?$")  # not gemini-pro-latest, an alias of today's Pro


def table_of(provider: str, model: str) -> str:
    """The key of :data:`CONSTANTS` and of :data:`fidelity.tokens.calibrated.FITTED`
    that counts ``model``: ``anthropic-4.7`` for Claude models of the Opus 4.7
    tokenizer and later, ``gemini-2.0`` for Gemini 1.0 to 2.0, else
    ``provider`` (also for an unreadable version)."""
    if provider == "anthropic":
        version = claude_version(model)
        if version is not None and version >= NEW_TOKENIZER:
            return "anthropic-4.7"
    if provider == "gemini" and _GEMINI_EARLY.search(model.lower()):
        return "gemini-2.0"
    return provider


def anthropic_tool_prompt(model: str, tool_choice: Any) -> int:
    """Tokens of Anthropic's tool-use system prompt; a model whose version
    cannot be read is taken as a current one."""
    # documented sizes, auto/none then any/tool:
    # https://platform.claude.com/docs/en/agents-and-tools/tool-use/overview, "Pricing"
    forced = isinstance(tool_choice, Mapping) and tool_choice.get("type") in ("any", "tool")
    key = model.lower()
    version = claude_version(key)
    if version is None or version >= (4, 5):
        return TOOL_PROMPT_RECORDED[1] if forced else TOOL_PROMPT_RECORDED[0]
    if version == (3, 5) and "sonnet" in key:
        return 261 if forced else 294
    if version[0] == 3 and version[1] < 7 and "haiku" in key:
        return 340 if forced else 264
    if version == (3, 0) and "opus" in key:
        return 281 if forced else 530
    if version == (3, 0) and "sonnet" in key:
        return 235 if forced else 159
    return 313 if forced else 346


def _thinking_kind(model: str, params: Mapping[str, Any]) -> Special | None:
    """The overhead extended thinking adds, ``None`` for none (fitted; adaptive
    thinking on Opus 4.7 and later adds nothing)."""
    thinking = params.get("thinking")
    if not isinstance(thinking, Mapping):
        return None
    if thinking.get("type") == "enabled":
        return THINK
    if thinking.get("type") == "adaptive" and table_of("anthropic", model) == "anthropic":
        return ADAPT
    return None


#: keys whose object or array value the model reads as JSON (tool arguments)
_JSON_KEYS = ("input", "args", "arguments", "response")


def _texts(value: Any, out: list[Piece], media_of: Any, call: int = 0, doc: int = 0) -> None:
    """The pieces the model reads in ``value``, appended to ``out``.
    ``media_of`` (a media object of the wire format, else ``None``) is asked
    about mappings only: it answers ``None`` for anything else. ``call`` and
    ``doc``: the tokens each Anthropic ``tool_use``/``tool_result`` block and
    each document block that is not media add ahead of their own text
    (``call`` and ``document`` in :data:`CONSTANTS`)."""
    if isinstance(value, str):
        if value:
            out.append(value)
    elif isinstance(value, dict) or (not isinstance(value, list) and isinstance(value, Mapping)):
        media = media_of(value)
        if media is not None:
            out.append(media)
            return
        t = value.get("type")
        if t in ("thinking", "redacted_thinking") or value.get("thought") is True:
            # earlier turns' thinking is not in the context: https://platform.claude.com/docs/en/
            # build-with-claude/extended-thinking, "How context window is calculated"
            return
        if call and t in ("tool_use", "tool_result"):
            out.extend([CALL] * call)
        if doc and t == "document":
            out.extend([DOCUMENT] * doc)
        if t == "text" and isinstance(value.get("data"), str):
            out.append(value["data"])  # a plain-text document's source: its data is read as text
            return
        for k, v in value.items():
            if k in _SKIP_KEYS:
                continue
            if k in _JSON_KEYS and isinstance(v, (dict, list, Mapping)):
                out.append(orjson.dumps(v).decode())  # the model reads tool arguments as JSON
            else:
                _texts(v, out, media_of, call, doc)
    elif isinstance(value, list):
        for v in value:
            _texts(v, out, media_of, call, doc)
    elif value is not None and not isinstance(value, bool):
        out.append(orjson.dumps(value).decode())


def message_block_pieces(value: Any, media_of: Any, consts: Mapping[str, Mapping[str, float]] | None = None,
                         model: str = "") -> list[list[Piece]] | None:
    """The pieces of each block of a message's ``content`` list when the
    message's own pieces (:func:`one_segment_pieces` less its overhead) are
    exactly theirs one after the other (no other member the model reads),
    else ``None`` (Anthropic's block ends, without a second pass over the
    message). ``model`` picks the table (:func:`table_of`)."""
    if not (isinstance(value, dict) or isinstance(value, Mapping)) or media_of(value) is not None:
        return None
    if value.get("type") in ("thinking", "redacted_thinking") or value.get("thought") is True:
        return None
    content = value.get("content")
    if not isinstance(content, list):
        return None
    table = table_of("anthropic", model)
    call, doc = _n(table, "call", consts), _n(table, "document", consts)

    def texts(v: Any) -> list[Piece]:
        out: list[Piece] = []
        _texts(v, out, media_of, call, doc)
        return out

    if any(texts({k: v}) for k, v in value.items() if k != "content" and k not in _SKIP_KEYS):
        return None
    return [texts(block) for block in content]


_UNPARSED: Any = object()


def _loads(data: bytes) -> Any:
    """``data`` parsed, else its text."""
    try:
        return orjson.loads(data)
    except orjson.JSONDecodeError:
        return data.decode("utf-8", "replace")


def _tool_json(value: Any) -> str:
    if isinstance(value, Mapping):
        value = {k: v for k, v in value.items() if k != "cache_control"}
    return orjson.dumps(value).decode()


def _n(provider: str, key: str, consts: Mapping[str, Mapping[str, float]] | None) -> int:
    table = (consts or CONSTANTS).get(provider, {})
    return max(0, round(table.get(key, 0)))


def segment_pieces(provider: str, segs: Sequence[Segment], model: str, media_of: Any,
                   consts: Mapping[str, Mapping[str, float]] | None = None) -> list[list[Piece]]:
    """Pieces of each segment of an ``anthropic-messages`` or ``gemini`` cache
    view. Gemini: the billed thought signatures of the current turn
    (:func:`signature_tokens`) are appended to the last segment: inline, they
    would break the prefix the next request reads from the cache, and recorded
    cache reads say it does not break."""
    out: list[list[Piece]] = []
    params: Mapping[str, Any] = {}
    first_tool = next((i for i, s in enumerate(segs) if s.kind == "tools"), None)
    values: list[Any] = [_UNPARSED] * len(segs)
    start = len(segs)
    if provider == "gemini":
        for i, seg in enumerate(segs):
            if seg.kind == "message":
                values[i] = _loads(seg.data)
        start = current_turn_start([v if s.kind == "message" else None for s, v in zip(segs, values)])
    signed = 0
    for i, seg in enumerate(segs):
        if seg.kind == "params":
            params = params_value(seg)
        out.append(one_segment_pieces(provider, seg, model, media_of, params, i == first_tool, consts,
                                      value=values[i]))
        if i > start and seg.kind == "message":
            signed += signature_tokens(values[i])
    if signed and out:
        out[-1] += [SIGNATURE] * signed
    return out


def _parts(content: Any) -> list[Any]:
    parts = content.get("parts") if isinstance(content, Mapping) else None
    return parts if isinstance(parts, list) else []


def current_turn_start(contents: Sequence[Any]) -> int:
    """Index of the user content that opens the current turn of a Gemini
    conversation: the last one with a part that is not a function response;
    ``-1`` when there is none. ``contents``: each message parsed (``None``
    for a segment that is not a message)."""
    # Google validates the signatures of the current turn only:
    # https://ai.google.dev/gemini-api/docs/thought-signatures
    for i in range(len(contents) - 1, -1, -1):
        c = contents[i]
        if not isinstance(c, Mapping) or c.get("role", "user") != "user":
            continue
        if any(not (isinstance(p, Mapping) and ({"functionResponse", "function_response"} & p.keys()))
               for p in _parts(c)):
            return i
    return -1


def signature_tokens(content: Any) -> int:
    """Billed tokens of the thought signatures on one Gemini content of the
    current turn: field-2 signatures only (``C...``, field 1, bills nothing)."""
    n = 0
    for p in _parts(content):
        if not isinstance(p, Mapping):
            continue
        sig = p.get("thoughtSignature", p.get("thought_signature"))
        if isinstance(sig, str) and sig[:1] == "E":  # base64 of 0x12..: protobuf field 2, length-delimited
            n += round(len(sig) / GEMINI_SIGNATURE_CHARS)
    return n


def schema_text(fmt: Any) -> str:
    """The text a structured output's ``format`` counts as: its ``schema``
    (else the whole format) as JSON with one member a line, indented by tabs
    (which fits recorded counts better than compact JSON)."""
    value = fmt.get("schema", fmt) if isinstance(fmt, Mapping) else fmt
    return json.dumps(value, indent="\t", ensure_ascii=False)


def params_value(seg: Segment) -> Mapping[str, Any]:
    """The params segment parsed (``{}`` when it is not an object)."""
    value = _loads(b"{" + seg.data + b"}")
    return value if isinstance(value, Mapping) else {}


def one_segment_pieces(provider: str, seg: Segment, model: str, media_of: Any, params: Mapping[str, Any],
                       first_tool: bool, consts: Mapping[str, Mapping[str, float]] | None = None,
                       value: Any = _UNPARSED) -> list[Piece]:
    """Pieces of one segment of :func:`segment_pieces`: ``params`` is the
    view's params segment parsed (:func:`params_value`), read by the first
    tool (Anthropic's tool-use system prompt depends on ``tool_choice``).
    ``value``: ``seg.data`` parsed, when the caller has it (not for the
    params segment)."""
    table = table_of(provider, model)
    if seg.kind == "params":
        return _params_pieces(provider, model, params_value(seg), table, consts)
    if value is _UNPARSED:
        value = _loads(seg.data)
    pieces: list[Piece] = []
    if seg.kind == "tools":
        if first_tool and provider == "anthropic":
            pieces += [DOC] * anthropic_tool_prompt(model, params.get("tool_choice"))
        if isinstance(value, Mapping) and value.get("defer_loading") is True:
            # not in the context until the tool search tool loads it:
            # https://platform.claude.com/docs/en/agents-and-tools/tool-use/tool-search-tool
            return pieces
        pieces += [TOOL] * _n(table, "tool", consts)
        pieces.append(_tool_json(value))
        return pieces
    pieces += [SYSTEM] * _n(table, "system", consts) if seg.kind == "system" else [MSG] * _n(table, "message", consts)
    if provider == "anthropic":
        _texts(value, pieces, media_of, _n(table, "call", consts), _n(table, "document", consts))
    else:
        _texts(value, pieces, media_of)
    return pieces


def _params_pieces(provider: str, model: str, params: Mapping[str, Any], table: str,
                   consts: Mapping[str, Mapping[str, float]] | None) -> list[Piece]:
    """Pieces of the params segment: the per-request count, extended thinking,
    structured outputs' schema and frame, Gemini's response schema."""
    pieces: list[Piece] = [BASE] * _n(table, "base", consts)
    gen = params.get("generationConfig")
    if not isinstance(gen, Mapping):
        gen = params
    if provider == "anthropic":
        think = _thinking_kind(model, params)
        if think is not None:
            pieces += [think] * _n(table, "thinking" if think is THINK else "adaptive", consts)
    elif isinstance(gen.get("thinkingConfig"), Mapping):
        pieces += [THINK] * _n(table, "thinking", consts)
    schema = False
    # structured outputs: https://platform.claude.com/docs/en/build-with-claude/structured-outputs
    for key in ("output_format", "output_config"):
        value = params.get(key)
        if isinstance(value, Mapping):
            # output_format is the earlier spelling of output_config.format: read as that
            read = {"format": value} if key == "output_format" else \
                {k: v for k, v in value.items() if k != "effort"}  # effort bills nothing
            schema = schema or "format" in read
            fmt = read.pop("format", None)
            if fmt is not None:
                pieces.append(schema_text(fmt))
            if read:
                pieces.append(orjson.dumps(read).decode())
    if schema:
        pieces += [SCHEMA] * _n(table, "schema", consts)
    for key in ("responseSchema", "responseJsonSchema", "response_schema"):
        if key in gen:
            pieces.append(orjson.dumps(gen[key]).decode())
    return pieces
