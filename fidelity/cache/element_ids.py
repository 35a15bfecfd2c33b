"""Billed token ids element by element, per dialect: the handlers of the
element builder (:class:`fidelity.cache.builder.PromptIds`). A
:class:`Handler` names the *context* an element's ids read from the rest of
the view and computes one element's ids, so that an unchanged element in an
unchanged context reuses its ids; :class:`Previous` carries a partition's
previous request. The contexts per dialect: docs/builder.md.
"""

from __future__ import annotations

from array import array
from bisect import bisect_left
from collections.abc import Hashable, Sequence
from dataclasses import dataclass, field
from itertools import chain
from typing import Any

import orjson

from .. import providers, tokens, wire
from ..tokens import framing_estimate, framing_openai
from ..tokens.billed import media_in, pieces_ids, prompt_tail, prompt_tokenizer
from ..wire import Segment
from ..wire import _template as tpl
from ..wire.anthropic_messages import billing_block_keyed, is_billing_block
from .anthropic_blocks import LEVELS, MARKER, block_ends_of, block_lengths, strip_markers
from .assemble import Assembled, anthropic_assemble, anthropic_images, generic_assemble, level_starts
from .invalidation import ANTHROPIC_INVALIDATES
from .items import FastView, Item, dumps_value
from .simulator import SimRequest

__all__ = ["Handler", "Previous", "handler_for", "SKIP"]

#: the context of an element the cache view leaves out (no ids)
SKIP = ("skip",)
_EMPTY = array(tokens.TOKEN_TYPECODE)


@dataclass
class Previous:
    """The partition's previous request: its first ``k`` elements equal this
    request's, ``n`` in all; what :meth:`Handler.prepare` gave, each
    element's context and result, what :meth:`Handler.assemble` left, and
    the elements themselves."""

    k: int
    n: int
    prep: Any
    ctxs: list[Hashable]
    results: list[Any]
    state: Any
    #: its elements (a body read from bytes: none), and the digests of
    #: their bytes where the builder made them all
    items: Sequence[Item] = ()
    datas: list[bytes] | None = None


@dataclass
class Handler:
    """One dialect's element functions (see the module docstring)."""

    dialect: wire.Dialect
    cache_model: str

    @property
    def name(self) -> str:
        return self.dialect.name

    def tokenizer(self, model: str, prev: Previous | None = None) -> tokens.Tokenizer:
        if prev is not None and prev.prep.model == model:
            return prev.prep.tok  # type: ignore[no-any-return]
        return prompt_tokenizer(model, self.dialect.provider, self.dialect.name)

    # -- the steps (overridden per dialect) ---------------------------------
    def prepare(self, obj: dict[str, Any], view: FastView, model: str, prev: Previous | None = None,
                endpoint: str | None = None) -> Any:
        """What the request's elements read from the rest of the view (and,
        for Anthropic, from the endpoint: :func:`billing_block_keyed`)."""
        raise NotImplementedError

    def contexts(self, prep: Any, items: Sequence[Item], prev: Previous | None = None) -> list[Hashable]:
        """Each element's context: equal element bytes and equal context give
        equal ids. With ``prev``, the first ``prev.k`` items are ``prev``'s."""
        raise NotImplementedError

    def element(self, prep: Any, item: Item, data: bytes, ctx: Hashable) -> Any:
        """One element's result (its ids, with block ends where the dialect has them)."""
        raise NotImplementedError

    def memo_bytes(self, data: bytes) -> bytes:
        """The bytes the memo keys an element on (its own, unless the
        dialect's ids ignore part of them)."""
        return data

    def finish(self, item: Item, got: Any) -> Any:
        """The element's result from what the memo holds (:meth:`element`'s
        value), where part of the result reads bytes the memo key leaves out."""
        return got

    def params_ids(self, prep: Any) -> array[int]:
        """The params segment's ids (memoised by the caller on the params bytes)."""
        return _EMPTY

    def levels(self, state: Any) -> tuple[int, int, int] | None:
        """Where the levels start in the assembled prompt (Anthropic's only)."""
        return None

    def _tail(self, tok: tokens.Tokenizer, model: str) -> array[int]:
        """:func:`~fidelity.tokens.billed.prompt_tail` of this dialect (kept per tokenizer and model)."""
        tails = self.__dict__.setdefault("_tails", {})
        got = tails.get((tok.name, model))
        if got is None:
            got = tails[(tok.name, model)] = prompt_tail(tok, self.name, model=model)
        return got  # type: ignore[no-any-return]

    def assemble(self, prep: Any, obj: dict[str, Any], params_ids: array[int], items: Sequence[Item],
                 results: list[Any], prev: Previous | None, same: int, time: float | None,
                 label: Hashable, output: Sequence[int] = ()) -> tuple[SimRequest, Any]:
        """The request, and what the next one reuses; ``results[:same]``
        are ``prev.results[:same]``. Default: :func:`generic_assemble`."""
        st: Assembled | None = prev.state if prev is not None else None
        if st is not None and same:
            kinds = st.kinds[: same + 1]
            kinds += [it.kind for it in items[same:]]
        else:
            kinds = ["params", *(it.kind for it in items)]
        # the params bytes are the partition key (model, prompt_cache_key...)
        return generic_assemble(kinds, [params_ids, *results], self._tail(prep.tok, prep.model), time, label,
                                output, prep.params, None, st, same + 1)


def result_ids(result: Any) -> array[int]:
    """The ids of an element's result (a bare array, or a tuple with the ids second)."""
    return result if isinstance(result, array) else result[1]


def _reuse(prev: Previous | None) -> int:
    """How many leading contexts of ``prev`` may be kept (0: none)."""
    return min(prev.k, prev.n, len(prev.ctxs)) if prev is not None else 0


# --------------------------------------------------------------------------- OpenAI


@dataclass
class _OpenAIPrep:
    tok: tokens.Tokenizer
    model: str
    names: dict[str, str]
    first_fn: int | None
    last_fn: int | None
    params: bytes
    #: one past the last tool element (0: none)
    tool_end: int = 0
    #: the elements that add call names: their indexes, and the pairs each adds
    call_at: list[int] = field(default_factory=list)
    call_pairs: list[list[tuple[str, str]]] = field(default_factory=list)
    #: call ids that tool results read (of this request and earlier ones of its partition)
    refs: set[str] = field(default_factory=set)
    #: the previous request's contexts hold for its first ``keep`` elements
    keep: int = 0
    #: the last user message's index (-1: none); whether reasoning of every turn is kept
    last_user: int = -1
    all_turns: bool = False
    #: the Chat function tools open a system message of their own (framing_openai.opens_system)
    own_system: bool = False


def _last_user(items: Sequence[Item], start: int = 0) -> int:
    """The index of the last user message among ``items[start:]`` (-1: none)."""
    return next((i for i in range(len(items) - 1, start - 1, -1)
                 if items[i].kind != "tools" and framing_openai.user_turn(items[i].value)), -1)


def _all_turns(params: bytes) -> bool:
    return b'"all_turns"' in params and framing_openai.all_turns(orjson.loads(b"{" + params + b"}"))


def _refs(v: Any) -> tuple[str, ...]:
    """The call ids a Chat message or Responses item looks up by name."""
    if not isinstance(v, dict):
        return ()
    return (str(v.get("call_id")), str(v.get("tool_call_id")))


class _OpenAI(Handler):
    def prepare(self, obj: dict[str, Any], view: FastView, model: str, prev: Previous | None = None,
                endpoint: str | None = None) -> _OpenAIPrep:
        items = view.items
        tok = self.tokenizer(model, prev)
        k = _reuse(prev)
        if k:
            pp: _OpenAIPrep = prev.prep  # type: ignore[union-attr]
            new_tools = [i for i in range(k, len(items)) if items[i].kind == "tools"]
            if not new_tools and pp.tool_end <= k:
                return self._grow(pp, tok, model, items, k, view.params)
        fns = [i for i, it in enumerate(items) if it.kind == "tools" and framing_openai.function_of(it.value) is not None]
        tool_end = max((i + 1 for i, it in enumerate(items) if it.kind == "tools"), default=0)
        call_at: list[int] = []
        pairs: list[list[tuple[str, str]]] = []
        refs: set[str] = set()
        for i, it in enumerate(items):
            if it.kind != "tools":
                got = framing_openai.call_pairs(it.value)
                if got:
                    call_at.append(i)
                    pairs.append(got)
                refs.update(_refs(it.value))
        names = dict(chain.from_iterable(pairs))
        return _OpenAIPrep(tok, model, names, fns[0] if fns else None, fns[-1] if fns else None, view.params,
                           tool_end, call_at, pairs, refs, 0, _last_user(items), _all_turns(view.params),
                           self._own_system(model, items, fns))

    def _own_system(self, model: str, items: Sequence[Item], fns: Sequence[int]) -> bool:
        return bool(fns) and framing_openai.opens_system(
            self.dialect.name == "openai-chat", model, [it.value for it in items if it.kind != "tools"])

    def _grow(self, pp: _OpenAIPrep, tok: tokens.Tokenizer, model: str, items: Sequence[Item], k: int,
              params: bytes) -> _OpenAIPrep:
        """The previous request's prep with its elements past ``k`` replaced
        by this request's: tools unchanged (all among the first ``k``)."""
        cut = bisect_left(pp.call_at, k)
        call_at, pairs = pp.call_at[:cut], pp.call_pairs[:cut]
        gone = pp.call_pairs[cut:]
        names = pp.names.copy() if not gone else dict(chain.from_iterable(pairs))
        added: list[tuple[str, str]] = []
        refs: list[str] = []
        for i in range(k, len(items)):
            v = items[i].value
            got = framing_openai.call_pairs(v)
            if got:
                call_at.append(i)
                pairs.append(got)
                added += got
            refs += _refs(v)
        names.update(added)
        # the kept contexts read names.get(id) for ids among pp.refs: they
        # hold unless one of those now names another function
        keep = k
        for key, _ in chain(chain.from_iterable(gone), added):
            if key in pp.refs and names.get(key) != pp.names.get(key):
                keep = 0
                break
        pp.refs.update(refs)  # a superset of what the kept elements read: the check stays safe
        refs_all = pp.refs
        # a later user message finishes the turn of the reasoning items before it
        last = _last_user(items, k)
        if last < 0:
            last = pp.last_user if pp.last_user < k else _last_user(items)
        keep_all = _all_turns(params)
        own = self._own_system(model, items, [i for i in (pp.first_fn,) if i is not None])
        if keep_all != pp.all_turns or own != pp.own_system:
            keep = 0
        elif last != pp.last_user:
            keep = min(keep, max(0, min(last, pp.last_user) + 1))
        return _OpenAIPrep(tok, model, names, pp.first_fn, pp.last_fn, params, pp.tool_end, call_at, pairs,
                           refs_all, keep, last, keep_all, own)

    def _context(self, prep: _OpenAIPrep, i: int, it: Item) -> Hashable:
        if it.kind == "tools":
            return (i == prep.first_fn, i == prep.last_fn, prep.own_system)
        where = it.where
        flag = 1 if where == ("instructions",) else 2 if where == ("input",) else 0
        v = it.value
        if isinstance(v, dict):
            if framing_openai.finished_reasoning(v, i, prep.last_user, prep.all_turns):
                return (flag, None, None, True)
            return (flag, prep.names.get(str(v.get("call_id"))), prep.names.get(str(v.get("tool_call_id"))))
        return (flag,)

    def contexts(self, prep: _OpenAIPrep, items: Sequence[Item], prev: Previous | None = None) -> list[Hashable]:
        keep = min(prep.keep, _reuse(prev))
        out: list[Hashable] = prev.ctxs[:keep] if keep else []  # type: ignore[union-attr]
        ctx = self._context
        out += [ctx(prep, i, items[i]) for i in range(keep, len(items))]
        return out

    def element(self, prep: _OpenAIPrep, item: Item, data: bytes, ctx: Hashable) -> Any:
        if item.kind == "tools":
            flags: tuple[bool, bool, bool] = ctx  # type: ignore[assignment]
            seg = Segment("tools", 0, "", data)
            pieces = framing_openai.one_segment_pieces(seg, None, prep.model, {}, flags[0], flags[1],
                                                       own_system=flags[2])
        else:
            flag = ctx[0]  # type: ignore[index]
            ptr = "/instructions" if flag == 1 else "/input" if flag == 2 else ""
            seg = Segment(item.kind, 0, ptr, data)  # type: ignore[arg-type]
            pieces = framing_openai.one_segment_pieces(seg, item.value, prep.model, prep.names, False, False,
                                                       finished=len(ctx) > 3)  # type: ignore[arg-type]
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
    overhead: int  # the ids of a message with no blocks (block ends)


@dataclass
class _AnthropicState:
    asm: Assembled
    blocks: list[Any]  # the results that are blocks (those not left out)
    images: list[int]  # image blocks in the first i elements, for each i


class _Anthropic(Handler):
    def prepare(self, obj: dict[str, Any], view: FastView, model: str, prev: Previous | None = None,
                endpoint: str | None = None) -> _AnthropicPrep:
        if prev is not None and prev.prep.params == view.params and MARKER not in view.params:
            pp: _AnthropicPrep = prev.prep
            params, value, tok, overhead = pp.params, pp.params_value, pp.tok, pp.overhead
        else:
            params = strip_markers(view.params)
            value = framing_estimate.params_value(Segment("params", 0, "", params))
            tok = self.tokenizer(model, prev)
            overhead = self._overhead(tok, model)
        first = 0 if view.items and view.items[0].kind == "tools" else None
        return _AnthropicPrep(tok, model, params, value, first,
                              isinstance(obj.get("system"), list) and not billing_block_keyed(endpoint), overhead)

    def _overhead(self, tok: tokens.Tokenizer, model: str) -> int:
        """The ids of a message with no blocks: what :func:`fidelity.cache.anthropic_blocks.block_lengths`
        takes off each block counted as a one-block message."""
        memo: dict[tuple[str, str], int] = self.__dict__.setdefault("_overheads", {})
        got = memo.get((tok.name, model))
        if got is None:
            pieces = framing_estimate.one_segment_pieces(
                "anthropic", Segment("message", 0, "", b'{"role":"user","content":[]}'), model, media_in, {}, False)
            got = memo[(tok.name, model)] = len(pieces_ids(tok, pieces, "anthropic", model))
        return got

    def contexts(self, prep: _AnthropicPrep, items: Sequence[Item], prev: Previous | None = None) -> list[Hashable]:
        out: list[Hashable] = [None] * len(items)
        if prep.first_tool is not None:
            out[prep.first_tool] = ("first", prep.params)
        if prep.billing:
            for i, it in enumerate(items):
                if it.kind == "system" and is_billing_block(it.value):
                    out[i] = SKIP
                elif it.kind == "message":
                    break
        return out

    def memo_bytes(self, data: bytes) -> bytes:
        return strip_markers(data)

    def element(self, prep: _AnthropicPrep, item: Item, data: bytes, ctx: Hashable) -> Any:
        """``(level, ids, overhead, block lengths)``: nothing here reads the
        markers (the memo keys on the element without them, so the message a
        breakpoint moved off is a memo hit); :meth:`finish` adds the block ends."""
        value = item.value
        if MARKER in data:
            unmarked = strip_markers(data)
            try:
                plain = orjson.loads(unmarked)
            except orjson.JSONDecodeError:
                plain = unmarked.decode("utf-8", "replace")
        else:
            unmarked, plain = data, value
        seg = Segment(item.kind, 0, "", unmarked)  # type: ignore[arg-type]
        content = value.get("content") if isinstance(value, dict) and item.kind == "message" else None
        if isinstance(content, list) and len(content) > 1:
            per_block = framing_estimate.message_block_pieces(plain, media_in, model=prep.model)
            if per_block is not None and len(per_block) == len(content):
                # the message tokenized block by block: the block lengths
                # come from the same ids (no second pass over the message)
                lead = framing_estimate.one_segment_pieces("anthropic", seg, prep.model, media_in,
                                                           prep.params_value, False, value={})
                ids = pieces_ids(prep.tok, lead, "anthropic", prep.model)
                lengths = []
                for pieces in per_block:
                    block_ids = pieces_ids(prep.tok, pieces, "anthropic", prep.model)
                    lengths.append(len(block_ids))
                    ids.extend(block_ids)
                return (LEVELS[item.kind], ids, prep.overhead, lengths)
        pieces = framing_estimate.one_segment_pieces("anthropic", seg, prep.model, media_in, prep.params_value,
                                                     ctx is not None, value=plain)
        ids = pieces_ids(prep.tok, pieces, "anthropic", prep.model)
        overhead, lengths = 0, []
        if isinstance(content, list) and len(content) > 1:
            # the bytes of each content block: orjson's, as the element's own bytes are
            blocks = [dumps_value(b) for b in content]
            overhead, lengths = block_lengths(prep.tok, self.dialect, prep.model, seg, value, blocks)
        return (LEVELS[item.kind], ids, overhead, lengths)

    def finish(self, item: Item, got: Any) -> Any:
        level, ids, overhead, lengths = got
        return (level, ids, block_ends_of(item.value, item.kind, len(ids), overhead, lengths))

    def params_ids(self, prep: _AnthropicPrep) -> array[int]:
        pieces = framing_estimate.one_segment_pieces("anthropic", Segment("params", 0, "", prep.params), prep.model,
                                                     media_in, prep.params_value, False)
        return pieces_ids(prep.tok, pieces, "anthropic", prep.model)

    def assemble(self, prep: _AnthropicPrep, obj: dict[str, Any], params_ids: array[int], items: Sequence[Item],
                 results: list[Any], prev: Previous | None, same: int, time: float | None,
                 label: Hashable, output: Sequence[int] = ()) -> tuple[SimRequest, Any]:
        members = [(k, dumps_value(v)) for k, v in obj.items() if k in ANTHROPIC_INVALIDATES]
        st: _AnthropicState | None = prev.state if prev is not None else None
        if st is not None and same:
            n_blocks = same - results[:same].count(None)
            blocks = st.blocks[:n_blocks]
            images = st.images[: same + 1]
        else:
            n_blocks, blocks, images, same = 0, [], [0], 0
        blocks += [r for r in results[same:] if r is not None]
        total = images[-1]
        for it in items[same:]:
            total += anthropic_images((it.value,)) if it.kind == "message" else 0
            images.append(total)
        req, asm = anthropic_assemble(params_ids, blocks, members, obj, prep.model, time, label, output, total,
                                      st.asm if st is not None else None, n_blocks)
        return req, _AnthropicState(asm, blocks, images)

    def levels(self, state: _AnthropicState) -> tuple[int, int, int]:
        return level_starts(state.asm)


# --------------------------------------------------------------------------- DeepSeek


@dataclass
class _DeepSeekPrep:
    tok: tokens.Tokenizer
    messages: list[Any]
    tools: bool
    n_system: int
    system: str
    last_user: int
    model: str = ""
    n_tools: int = 0
    #: the previous request's contexts hold for its first ``keep`` elements,
    #: except those at ``redo``
    keep: int = 0
    redo: tuple[int, ...] = ()
    #: the cache-key members (the partition key)
    params: bytes = b""


class _DeepSeek(Handler):
    def prepare(self, obj: dict[str, Any], view: FastView, model: str, prev: Previous | None = None,
                endpoint: str | None = None) -> _DeepSeekPrep:
        messages, tools, n_system = tpl._lists(obj)
        system = "\n\n".join(tpl._content_text(m.get("content")) for m in messages[:n_system])
        tok = self.tokenizer(model, prev)
        head = n_system + len(tools)  # system, then tools, then the turns (template order)
        k = _reuse(prev)
        if k and k >= head:
            pp: _DeepSeekPrep = prev.prep  # type: ignore[union-attr]
            if (pp.n_system, pp.system, pp.n_tools, pp.tools) == (n_system, system, len(tools), bool(tools)):
                m_k = k - len(tools)  # the first message not shared
                if pp.last_user < m_k:
                    last = next((i for i in range(len(messages) - 1, m_k - 1, -1)
                                 if isinstance(messages[i], dict) and messages[i].get("role") == "user"),
                                pp.last_user)
                    # contexts that change: the last kept message (its next
                    # neighbour), assistant messages on either side of the last user
                    lo, hi = min(last, pp.last_user), max(last, pp.last_user)
                    redo = {k - 1, *range(max(lo + 1, n_system) + len(tools), min(hi, m_k - 1) + 1 + len(tools))}
                    return _DeepSeekPrep(tok, messages, bool(tools), n_system, system, last, model, len(tools), k,
                                         tuple(sorted(i for i in redo if head <= i < k)), view.params)
        return _DeepSeekPrep(tok, messages, bool(tools), n_system, system, tpl.deepseek_v4_last_user(messages),
                             model, len(tools), params=view.params)

    def _context(self, prep: _DeepSeekPrep, it: Item) -> Hashable:
        if it.kind == "system":
            return ("system", (tpl.BOS + prep.system) if it.index == 0 else "")
        if it.kind == "tools":
            return (it.index == 0, it.index == prep.n_tools - 1, bool(prep.n_system), bool(prep.system))
        return tpl.deepseek_v4_message_context(prep.messages, it.where[1], prep.last_user, prep.tools)

    def contexts(self, prep: _DeepSeekPrep, items: Sequence[Item], prev: Previous | None = None) -> list[Hashable]:
        keep = min(prep.keep, _reuse(prev))
        ctx = self._context
        if not keep:
            return [ctx(prep, it) for it in items]
        out: list[Hashable] = prev.ctxs[:keep]  # type: ignore[union-attr]
        for i in prep.redo:
            if i < keep:
                out[i] = ctx(prep, items[i])
        out += [ctx(prep, items[i]) for i in range(keep, len(items))]
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


_HANDLERS: dict[str, Handler] = {}


def handler_for(dialect: wire.Dialect) -> Handler | None:
    """The element handler of ``dialect``, or ``None`` (built from the whole view)."""
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
