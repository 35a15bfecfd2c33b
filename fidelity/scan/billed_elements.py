"""Billed token ids element by element, per dialect, for the scan's fast path.

:func:`fidelity.cache.prompts.cache_prompt` turns a whole body into a
:class:`~fidelity.cache.simulator.SimRequest`: the dialect's cache view, the
billed ids of every segment, then the request. Each segment's ids depend on
the segment and on a little *context* from the rest of the view. A
:class:`Handler` names that context for each element of the scan's fast view
(:class:`~fidelity.scan.view.FastView`) and computes one element's ids with
the very per-segment functions ``cache_prompt`` runs, so that
:class:`~fidelity.scan.prompt_ids.PromptIds` can reuse an element's ids
whenever the element and its context are unchanged:

* **openai-chat, openai-responses** (:mod:`fidelity.tokens.framing_openai`):
  a function tool reads whether it is the first and the last function tool
  (the ``namespace functions`` head and tail); a tool result reads the name
  of the call it answers (``names.get(str(call_id))`` over the whole view);
  ``/instructions`` and a string ``/input`` have their own framing.
* **anthropic-messages** (:mod:`fidelity.tokens.framing_estimate`, markers
  removed, block ends by :func:`fidelity.cache.prompts.anthropic_block_ends`):
  the first tool reads ``tool_choice`` in the params (the tool-use system
  prompt); Claude Code's billing block is left out as the cache view does.
* **deepseek** (:mod:`fidelity.wire._template`): a message's template text
  reads whether it follows the last user message, its neighbours' roles and
  whether it opens the prompt; a tool reads its place and the system text.

The bytes of an element are ``orjson.dumps`` of its parsed value: exactly
the slice ``cache_prompt`` cuts from the body when the body is compact JSON as
orjson writes it, which the caller checks. Other dialects have no handler
(the caller uses ``cache_prompt``).
"""

from __future__ import annotations

from array import array
from collections.abc import Hashable, Sequence
from dataclasses import dataclass, replace
from typing import Any

from .. import providers, tokens, wire
from ..cache.prompts import (
    _LEVEL_SALTS,
    _LEVELS,
    MARKER,
    anthropic_block_ends,
    anthropic_request,
    generic_request,
    strip_markers,
)
from ..cache.simulator import SimRequest
from ..tokens import framing_estimate, framing_openai
from ..tokens.billed import billing_tokenizer, media_in, pieces_ids, prompt_tail
from ..wire import Segment
from ..wire import _template as tpl
from ..wire.anthropic_messages import _is_billing_block, billing_block_keyed
from .view import FastView, Item, dumps_value

__all__ = ["Handler", "Unsupported", "handler_for", "SKIP"]

#: the context of an element the cache view leaves out (no ids)
SKIP = ("skip",)
_EMPTY = array(tokens.TOKEN_TYPECODE)


class Unsupported(Exception):
    """A body the fast path does not build exactly as ``cache_prompt`` does."""


@dataclass
class Handler:
    """One dialect's element functions (see the module docstring)."""

    dialect: wire.Dialect
    cache_model: str

    @property
    def name(self) -> str:
        return self.dialect.name

    def tokenizer(self, model: str) -> tokens.Tokenizer:
        return billing_tokenizer(tokens.for_model(model, self.dialect.provider), self.dialect.name)

    # -- the steps (overridden per dialect; the request is assembled by
    # :func:`generic`, or :meth:`_Anthropic.anthropic`) ----------------------
    def prepare(self, obj: dict[str, Any], view: FastView, model: str) -> Any:
        """What the request's elements read from the rest of the view."""
        raise NotImplementedError

    def contexts(self, prep: Any, items: Sequence[Item]) -> list[Hashable]:
        """Each element's context: equal element bytes and equal context give equal ids."""
        raise NotImplementedError

    def element(self, prep: Any, item: Item, data: bytes, ctx: Hashable) -> Any:
        """One element's result (its ids, with block ends where the dialect has them)."""
        raise NotImplementedError

    def params_ids(self, prep: Any) -> array[int]:
        """The params segment's ids (memoised by the caller on the params bytes)."""
        return _EMPTY


def result_ids(result: Any) -> array[int]:
    """The ids of an element's result (a bare array, or ``(level, ids, ends)``)."""
    return result if isinstance(result, array) else result[1]


# --------------------------------------------------------------------------- OpenAI


@dataclass
class _OpenAIPrep:
    tok: tokens.Tokenizer
    model: str
    names: dict[str, str]
    first_fn: int | None
    last_fn: int | None
    params: bytes


class _OpenAI(Handler):
    def prepare(self, obj: dict[str, Any], view: FastView, model: str) -> _OpenAIPrep:
        items = view.items
        if self.dialect.name == "openai-responses" and "tools" in obj and not isinstance(obj["tools"], list):
            raise Unsupported("tools is not an array")
        fns = [i for i, it in enumerate(items) if it.kind == "tools" and framing_openai.function_of(it.value) is not None]
        names = framing_openai.call_names([it.value for it in items if it.kind != "tools"])
        return _OpenAIPrep(self.tokenizer(model), model, names, fns[0] if fns else None,
                           fns[-1] if fns else None, view.params)

    def contexts(self, prep: _OpenAIPrep, items: Sequence[Item]) -> list[Hashable]:
        out: list[Hashable] = []
        names = prep.names
        for i, it in enumerate(items):
            if it.kind == "tools":
                out.append((i == prep.first_fn, i == prep.last_fn))
                continue
            where = it.where
            flag = 1 if where == ("instructions",) else 2 if where == ("input",) else 0
            v = it.value
            if names and isinstance(v, dict):
                out.append((flag, names.get(str(v.get("call_id"))), names.get(str(v.get("tool_call_id")))))
            else:
                out.append((flag,))
        return out

    def element(self, prep: _OpenAIPrep, item: Item, data: bytes, ctx: Hashable) -> Any:
        if item.kind == "tools":
            flags: tuple[bool, bool] = ctx  # type: ignore[assignment]
            seg = Segment("tools", 0, "", data)
            pieces = framing_openai.one_segment_pieces(seg, None, prep.model, {}, flags[0], flags[1])
        else:
            flag = ctx[0]  # type: ignore[index]
            ptr = "/instructions" if flag == 1 else "/input" if flag == 2 else ""
            seg = Segment(item.kind, 0, ptr, data)  # type: ignore[arg-type]
            pieces = framing_openai.one_segment_pieces(seg, item.value, prep.model, prep.names, False, False)
        return pieces_ids(prep.tok, pieces, self.dialect.provider, prep.model)

    def params_ids(self, prep: _OpenAIPrep) -> array[int]:
        pieces = framing_openai.one_segment_pieces(Segment("params", 0, "", prep.params), None, prep.model, {},
                                                   False, False)
        return pieces_ids(prep.tok, pieces, self.dialect.provider, prep.model)


# --------------------------------------------------------------------------- Anthropic


@dataclass
class _AnthropicPrep:
    tok: tokens.Tokenizer
    model: str
    params: bytes  # markers removed
    params_value: Any
    first_tool: int | None
    billing: bool  # the system list's billing blocks are left out


class _Anthropic(Handler):
    def prepare(self, obj: dict[str, Any], view: FastView, model: str) -> _AnthropicPrep:
        params = strip_markers(view.params)
        value = framing_estimate.params_value(Segment("params", 0, "", params))
        first = next((i for i, it in enumerate(view.items) if it.kind == "tools"), None)
        return _AnthropicPrep(self.tokenizer(model), model, params, value, first,
                              isinstance(obj.get("system"), list) and not billing_block_keyed(None))

    def contexts(self, prep: _AnthropicPrep, items: Sequence[Item]) -> list[Hashable]:
        out: list[Hashable] = [None] * len(items)
        if prep.first_tool is not None:
            out[prep.first_tool] = ("first", prep.params)
        if prep.billing:
            for i, it in enumerate(items):
                if it.kind == "system" and _is_billing_block(it.value):
                    out[i] = SKIP
                elif it.kind == "message":
                    break
        return out

    def element(self, prep: _AnthropicPrep, item: Item, data: bytes, ctx: Hashable) -> Any:
        unmarked = strip_markers(data) if MARKER in data else data
        pieces = framing_estimate.one_segment_pieces("anthropic", Segment(item.kind, 0, "", unmarked),  # type: ignore[arg-type]
                                                     prep.model,
                                                     media_in, prep.params_value, ctx is not None)
        ids = pieces_ids(prep.tok, pieces, "anthropic", prep.model)
        seg = Segment(item.kind, 0, "", data)  # type: ignore[arg-type]
        value = item.value
        content = value.get("content") if isinstance(value, dict) and item.kind == "message" else None
        # the bytes of each content block: orjson's, as the element's own bytes are
        blocks = [dumps_value(b) for b in content] if isinstance(content, list) and len(content) > 1 else None
        ends = anthropic_block_ends(prep.tok, self.dialect, prep.model, seg, ids, value,
                                    blocks)
        return (_LEVELS[item.kind], ids, ends)

    def params_ids(self, prep: _AnthropicPrep) -> array[int]:
        pieces = framing_estimate.one_segment_pieces("anthropic", Segment("params", 0, "", prep.params), prep.model,
                                                     media_in, prep.params_value, False)
        return pieces_ids(prep.tok, pieces, "anthropic", prep.model)

    def anthropic(self, prep: _AnthropicPrep, obj: dict[str, Any], params_ids: array[int], results: Sequence[Any],
                  time: float | None, label: Hashable) -> SimRequest:
        members = [(k, dumps_value(v)) for k, v in obj.items() if k in _LEVEL_SALTS]
        blocks = [r for r in results if r is not None]
        req = anthropic_request(params_ids, blocks, members, obj, prep.model, time, label)
        return replace(req, key="")


# --------------------------------------------------------------------------- DeepSeek


@dataclass
class _DeepSeekPrep:
    tok: tokens.Tokenizer
    messages: list[Any]
    tools: bool
    n_system: int
    system: str
    last_user: int


class _DeepSeek(Handler):
    def prepare(self, obj: dict[str, Any], view: FastView, model: str) -> _DeepSeekPrep:
        messages = obj.get("messages")
        if not isinstance(messages, list):
            raise Unsupported("messages is not an array")
        _, tools, n_system = tpl._lists(obj)
        system = "\n\n".join(tpl._content_text(m.get("content")) for m in messages[:n_system])
        return _DeepSeekPrep(self.tokenizer(model), messages, bool(tools), n_system, system,
                             tpl.deepseek_v4_last_user(messages))

    def contexts(self, prep: _DeepSeekPrep, items: Sequence[Item]) -> list[Hashable]:
        out: list[Hashable] = []
        n_tools = sum(1 for it in items if it.kind == "tools")
        for it in items:
            if it.kind == "system":
                out.append(("system", (tpl.BOS + prep.system) if it.index == 0 else ""))
            elif it.kind == "tools":
                out.append((it.index == 0, it.index == n_tools - 1, bool(prep.n_system), bool(prep.system)))
            else:
                out.append(tpl.deepseek_v4_message_context(prep.messages, it.where[1], prep.last_user, prep.tools))
        return out

    def element(self, prep: _DeepSeekPrep, item: Item, data: bytes, ctx: Hashable) -> Any:
        if item.kind == "system":
            text = ctx[1]  # type: ignore[index]
        elif item.kind == "tools":
            text = tpl.deepseek_v4_tool_text(item.value, ctx)  # type: ignore[arg-type]
        else:
            text = tpl.deepseek_v4_message_text(item.value, ctx)  # type: ignore[arg-type]
        return prep.tok.ids(text)


# --------------------------------------------------------------------------- dispatch


def generic(handler: Handler, prep: Any, params_ids: array[int], items: Sequence[Item], results: Sequence[Any],
            time: float | None, label: Hashable) -> SimRequest:
    """The request of a non-Anthropic handler: :func:`generic_request`."""
    kinds = ["params", *(it.kind for it in items)]
    return generic_request(kinds, [params_ids, *results], prompt_tail(prep.tok, handler.name), time, label,
                           (), "", None)


_HANDLERS: dict[str, Handler] = {}


def handler_for(dialect: wire.Dialect) -> Handler | None:
    """The fast path's handler of ``dialect``, or ``None``."""
    h = _HANDLERS.get(dialect.name)
    if h is None and dialect.name not in _HANDLERS:
        cls: type[Handler] | None = None
        if dialect.name in ("openai-chat", "openai-responses"):
            cls = _OpenAI
        elif dialect.name == "anthropic-messages":
            cls = _Anthropic
        elif dialect.name == "deepseek" and getattr(dialect, "templater", None) is tpl.deepseek_v4_texts \
                and getattr(dialect, "cache_order", None) == "template":
            cls = _DeepSeek
        if cls is not None:
            cm = providers.get(dialect.provider).cache_model or dialect.provider
            h = cls(dialect, cm)
        _HANDLERS[dialect.name] = h  # type: ignore[assignment]
    return h
