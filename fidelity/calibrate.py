"""Calibrate the DeepSeek prompt and cache model against real provider usage.

DeepSeek Harness (DSH) session logs recorded against the live DeepSeek API
carry, per model request, the prompt tokens DeepSeek served from its prefix
cache (``cacheReadTokens``) and those it computed (``inputTokens``). This
module rebuilds every recorded request, renders it the way DeepSeek V4's
chat template reads it, tokenizes it with the DeepSeek V4 tokenizer,
simulates DeepSeek's cache across the requests of a session and its
children in recorded order, and compares, step by step, the prediction with
what DeepSeek reported.

Everything here is pure: it takes sessions already read
(:mod:`fidelity.sources.dsh`) and their resolved sidecars, and returns a
:class:`Calibration` value; ``fidelity calibrate`` does the reading and the
printing.

Two pieces are *calibrated rules* that belong elsewhere once the lead moves
them (see ``docs/calibration-proposed-changes.md``):

* :func:`deepseek_v4_texts`: the DeepSeek V4 chat-template rendering of a
  Chat Completions body (for ``fidelity/wire/_template.py``);
* :class:`CalibratedDeepSeekCache`: DeepSeek's cache as the data shows it
  (for ``fidelity/cache/deepseek.py``).

What the data established, and how, is written up in ``docs/calibration.md``.
"""

from __future__ import annotations

import json
import statistics
from dataclasses import dataclass, field
from typing import Any, Callable, Iterable, Mapping, Sequence

from .cache._base import CacheModel, CacheOutcome, PromptTokens, common_prefix
from .model import Message, Request, Route
from .sources import dsh
from .tokens import Tokenizer

__all__ = [
    "CACHE_UNIT",
    "CWD_PLACEHOLDER",
    "CWD_STANDIN",
    "CalibratedDeepSeekCache",
    "deepseek_v4_texts",
    "deepseek_v4_prompt",
    "deepseek_v4_reply",
    "GroupInput",
    "StepResult",
    "SessionResult",
    "Summary",
    "Calibration",
    "calibrate",
    "summarize",
]

# --------------------------------------------------------------------------- the calibrated cache

#: DeepSeek's cache unit today, in tokens. Every non-zero ``cacheReadTokens``
#: in the recorded logs is a multiple of 128 (and not all are multiples of
#: 256); the documentation's 64 would leave half of them odd multiples of 64.
CACHE_UNIT = 128


class CalibratedDeepSeekCache(CacheModel):
    """DeepSeek's context cache as the recorded usage shows it.

    A request reads the longest prefix it shares with what an earlier
    request left in the cache, rounded *down* to whole :data:`CACHE_UNIT`
    token units. What a request leaves is its prompt followed by the model's
    reply (``PromptTokens.output``): a tool round's next request reads past
    the end of the previous prompt. No request-boundary unit is ever served
    whole: no recorded hit is a non-multiple of the unit, even where the next
    prompt repeated the previous prompt and reply completely.

    Token effect: none (the cache does not change what is sent). KV cache
    effect: cached = ``floor(common_prefix / 128) * 128``, so up to 127
    shared tokens at the end of the prefix are billed as misses.
    """

    name = "deepseek-calibrated"
    provider = "deepseek"
    unit = CACHE_UNIT
    includes_output = True
    ttl: float | None = None
    read_multiplier = 0.1
    write_multiplier = 1.0

    def reusable(self, common_prefix: int, prompt_len: int) -> int:
        return min(common_prefix, prompt_len) // self.unit * self.unit

    def predict(self, earlier: Sequence[PromptTokens], request: PromptTokens) -> CacheOutcome:
        n = len(request.tokens)
        best = 0
        for prior in earlier:
            if not self.alive(prior.time, request.time):
                continue
            best = max(best, self.reusable(common_prefix(prior.stored, request.tokens), n))
        stored = self.reusable(n, n)
        return CacheOutcome(cached=best, written=max(0, stored - best), uncached=n - best)


# --------------------------------------------------------------------------- the calibrated template

BOS = "<｜begin▁of▁sentence｜>"
EOS = "<｜end▁of▁sentence｜>"
USER = "<｜User｜>"
ASSISTANT = "<｜Assistant｜>"
THINK = "<think>"
END_THINK = "</think>"
DSML = "｜DSML｜"

#: The log's working-directory placeholder, and the stand-in used when
#: counting tokens. The recording machine's directory is unknown; every
#: occurrence of the placeholder in the recorded messages cost 35-40 tokens
#: more than the placeholder itself (median 40, see docs/calibration.md).
#: This temporary-directory path tokenizes to that cost.
CWD_PLACEHOLDER = "{{cwd}}"
CWD_STANDIN = "/private/var/folders/7q/kx0bz3yd1v5gh9jw2lt8m4rc0000gn/T/dsh-acp-8Rk2vQ"

_TOOLS_BLOCK = """## Tools

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

Texts = dict[tuple[str, int], str]


def _content_text(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "".join(p.get("text", "") for p in content if isinstance(p, dict) and isinstance(p.get("text"), str))
    return ""


def _dsml_calls(calls: Sequence[Any], *, compact: bool) -> str:
    """DSML tool-call block. ``compact``: JSON for non-string values without
    spaces (how the API re-renders history); otherwise ``", "``/``": "`` (how
    the model writes them, per ``outputTokens``)."""
    seps = (",", ":") if compact else (", ", ": ")
    invokes = []
    for call in calls:
        fn = call.get("function", {}) if isinstance(call, dict) else {}
        raw = fn.get("arguments") or "{}"
        try:
            args = json.loads(raw) if isinstance(raw, str) else raw
        except ValueError:
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


def _keeps_reasoning(message: Mapping[str, Any], index: int, last_user: int) -> bool:
    """Reasoning stays in the prompt on assistant messages after the last
    user message and on every assistant message that made tool calls; it is
    dropped from the final (tool-free) answer of an earlier turn."""
    return index > last_user or bool(message.get("tool_calls"))


def deepseek_v4_texts(body: Mapping[str, Any]) -> Texts:
    """Per-segment DeepSeek V4 chat-template text of a Chat Completions body,
    keyed like :func:`fidelity.wire._template.deepseek_texts` (``("message",
    i)`` by index into ``messages``, ``("tools", i)``).

    Framing (DSML generation, thinking mode):
    ``BOS`` + system text (+ ``"\\n\\n"`` + tool block when there are tools),
    each user message ``<｜User｜>text<｜Assistant｜>``, each assistant message
    ``<think>reasoning</think>`` (or only ``</think>`` where the reasoning is
    dropped) + content + DSML tool calls + ``EOS``, each run of tool results
    ``<｜User｜><tool_result>..</tool_result>...<｜Assistant｜>``. The
    generation prompt ``<think>`` is not part of any segment; see
    :func:`deepseek_v4_prompt`. ``{{cwd}}`` is left as is.
    """
    messages = body.get("messages") if isinstance(body.get("messages"), list) else []
    tools = body.get("tools") if isinstance(body.get("tools"), list) else []
    n_system = 0
    for m in messages:
        if not (isinstance(m, dict) and m.get("role") in ("system", "developer")):
            break
        n_system += 1
    last_user = max((i for i, m in enumerate(messages) if isinstance(m, dict) and m.get("role") == "user"),
                    default=-1)
    out: Texts = {}
    system = "\n\n".join(_content_text(m.get("content")) for m in messages[:n_system])
    for i in range(n_system):
        out[("message", i)] = (BOS + system) if i == 0 else ""
    for i, tool in enumerate(tools):
        fn = tool.get("function", tool) if isinstance(tool, dict) else tool
        schema = json.dumps(fn, ensure_ascii=False)
        if i == 0:
            lead = (BOS if not n_system else "") + ("\n\n" if system else "")
            head, tail = _TOOLS_BLOCK.split("{schemas}")
            lead += head.format(d=DSML, think=THINK, end_think=END_THINK)
        else:
            lead = "\n"
        text = lead + schema
        if i == len(tools) - 1:
            text += _TOOLS_BLOCK.split("{schemas}")[1]
        out[("tools", i)] = text
    if not n_system and not tools:
        out[("params", 0)] = BOS
    for i in range(n_system, len(messages)):
        m = messages[i] if isinstance(messages[i], dict) else {}
        role = m.get("role")
        if role == "assistant":
            reasoning = m.get("reasoning_content") or ""
            text = (THINK + reasoning + END_THINK) if _keeps_reasoning(m, i, last_user) else END_THINK
            text += _content_text(m.get("content"))
            if m.get("tool_calls"):
                text += _dsml_calls(m["tool_calls"], compact=True)
            out[("message", i)] = text + EOS
        elif role == "tool":
            prev = messages[i - 1].get("role") if i and isinstance(messages[i - 1], dict) else None
            nxt = messages[i + 1].get("role") if i + 1 < len(messages) and isinstance(messages[i + 1], dict) else None
            text = (USER if prev != "tool" else "") + "<tool_result>" + _content_text(m.get("content")) + "</tool_result>"
            out[("message", i)] = text + (ASSISTANT if nxt != "tool" else "")
        else:
            out[("message", i)] = USER + _content_text(m.get("content")) + ASSISTANT
    return out


def _ordered(body: Mapping[str, Any], texts: Texts) -> list[str]:
    messages = body.get("messages") if isinstance(body.get("messages"), list) else []
    tools = body.get("tools") if isinstance(body.get("tools"), list) else []
    n_system = sum(1 for _ in _leading_system(messages))
    keys: list[tuple[str, int]] = [("params", 0)]
    keys += [("message", i) for i in range(n_system)]
    keys += [("tools", i) for i in range(len(tools))]
    keys += [("message", i) for i in range(n_system, len(messages))]
    return [texts[k] for k in keys if k in texts]


def _leading_system(messages: list[Any]) -> Iterable[Any]:
    for m in messages:
        if not (isinstance(m, dict) and m.get("role") in ("system", "developer")):
            return
        yield m


def deepseek_v4_prompt(body: Mapping[str, Any], *, thinking: bool = True) -> str:
    """The whole prompt text DeepSeek V4 reads for a Chat Completions body:
    the segments in cache order, then the generation prompt (``<think>`` in
    thinking mode), with ``{{cwd}}`` replaced by :data:`CWD_STANDIN`."""
    text = "".join(_ordered(body, deepseek_v4_texts(body))) + (THINK if thinking else END_THINK)
    return text.replace(CWD_PLACEHOLDER, CWD_STANDIN)


def deepseek_v4_reply(message: Mapping[str, Any]) -> str:
    """The text the model generated for an assistant message (wire form):
    reasoning, ``</think>``, content, tool calls as written, ``EOS``. It
    follows the generation prompt in the cache."""
    text = (message.get("reasoning_content") or "") + END_THINK + _content_text(message.get("content"))
    if message.get("tool_calls"):
        text += _dsml_calls(message["tool_calls"], compact=False)
    return (text + EOS).replace(CWD_PLACEHOLDER, CWD_STANDIN)


# --------------------------------------------------------------------------- the comparison

@dataclass(frozen=True)
class GroupInput:
    """One scenario folder: its sessions and the sidecars of each
    (``sidecars[session.index]``; ``None`` where no sidecar applies)."""

    group: dsh.SessionGroup
    sidecars: Mapping[int, dsh.Sidecars | None]


@dataclass(frozen=True)
class StepResult:
    """One recorded request: what DeepSeek reported and what we predict.

    ``anchor``: the step fixes its session's unknown header length (the
    first request of a header whose text is unknown or differs from the
    sidecar), so its prompt error is zero by construction and left out of
    the prompt-error figures. ``absolute_prompt``: the prediction with no
    anchoring, where a sidecar gives the header (else ``None``).
    """

    session: str
    turn: int
    step: int
    real_prompt: int
    real_cached: int
    predicted_prompt: int
    predicted_cached: int
    anchor: bool
    absolute_prompt: int | None
    real_output: int | None
    predicted_output: int

    @property
    def prompt_error(self) -> int:
        return self.predicted_prompt - self.real_prompt

    @property
    def cached_error(self) -> int:
        return self.predicted_cached - self.real_cached

    def to_json(self) -> dict[str, Any]:
        return {
            "session": self.session, "turn": self.turn, "step": self.step,
            "real_prompt": self.real_prompt, "predicted_prompt": self.predicted_prompt,
            "prompt_error": self.prompt_error, "anchor": self.anchor,
            "absolute_prompt": self.absolute_prompt,
            "real_cached": self.real_cached, "predicted_cached": self.predicted_cached,
            "cached_error": self.cached_error,
            "real_output": self.real_output, "predicted_output": self.predicted_output,
        }


@dataclass(frozen=True)
class SessionResult:
    """A session log and its calibrated steps; ``skipped`` counts requests
    with no DeepSeek cache report (scripted usage) or copied seed steps."""

    name: str
    path: str
    steps: tuple[StepResult, ...]
    skipped: int = 0


@dataclass(frozen=True)
class Summary:
    steps: int
    prompt_steps: int
    prompt_error_median: float
    prompt_error_p95: float
    absolute_steps: int
    absolute_error_median: float | None
    cached_exact: float
    cached_within_unit: float
    #: exact share over the requests after a header's first (those the
    #: session itself can explain; a first request's hits come from other
    #: sessions' earlier runs)
    cached_exact_continuing: float
    over_predicted: int
    under_predicted: int
    output_error_median: float | None
    unit: int

    def to_json(self) -> dict[str, Any]:
        return dict(self.__dict__)


@dataclass(frozen=True)
class Calibration:
    sessions: tuple[SessionResult, ...]
    summary: Summary
    cache_model: str = CalibratedDeepSeekCache.name
    tokenizer: str = ""
    notes: tuple[str, ...] = field(default=())

    def to_json(self) -> dict[str, Any]:
        return {
            "cache_model": self.cache_model,
            "tokenizer": self.tokenizer,
            "summary": self.summary.to_json(),
            "sessions": [
                {"name": s.name, "path": s.path, "skipped": s.skipped, "steps": [st.to_json() for st in s.steps]}
                for s in self.sessions
            ],
        }


def _percentile(values: Sequence[float], q: float) -> float:
    """Nearest-rank percentile (q in 0..100) of a non-empty sequence."""
    ordered = sorted(values)
    rank = max(1, -(-len(ordered) * q // 100))
    return float(ordered[int(rank) - 1])


def summarize(steps: Sequence[StepResult], unit: int = CACHE_UNIT) -> Summary:
    """Median and 95th percentile of the absolute prompt-token error (anchor
    steps left out), share of exact and within-one-unit cached predictions,
    over- and under-predicted steps."""
    prompt = [abs(s.prompt_error) for s in steps if not s.anchor]
    absolute = [abs(s.absolute_prompt - s.real_prompt) for s in steps if s.absolute_prompt is not None]
    outputs = [abs(s.predicted_output - s.real_output) for s in steps if s.real_output is not None]
    n = len(steps)
    return Summary(
        steps=n,
        prompt_steps=len(prompt),
        prompt_error_median=float(statistics.median(prompt)) if prompt else 0.0,
        prompt_error_p95=_percentile(prompt, 95) if prompt else 0.0,
        absolute_steps=len(absolute),
        absolute_error_median=float(statistics.median(absolute)) if absolute else None,
        cached_exact=sum(s.cached_error == 0 for s in steps) / n if n else 0.0,
        cached_within_unit=sum(abs(s.cached_error) <= unit for s in steps) / n if n else 0.0,
        cached_exact_continuing=(sum(s.cached_error == 0 for s in steps if not s.anchor) / len(prompt)
                                 if prompt else 0.0),
        over_predicted=sum(s.cached_error > 0 for s in steps),
        under_predicted=sum(s.cached_error < 0 for s in steps),
        output_error_median=float(statistics.median(outputs)) if outputs else None,
        unit=unit,
    )


# --------------------------------------------------------------------------- rebuilding requests

Render = Callable[[Request], bytes]


def _reply_message(session: dsh.Session, step: dsh.Step) -> Message | None:
    """The assistant message a step produced (the surface message at the
    step's request cut)."""
    for index, message in session._messages:  # noqa: SLF001 - see proposed dsh.step_reply
        if index == step.request_index and message is not None and message.role == "assistant":
            return message
    return None


def _is_real(step: dsh.Step) -> bool:
    """DeepSeek reported its cache for this request (scripted providers in
    the recorded tests report usage without ``cacheReadTokens``)."""
    u = step.usage
    return u is not None and u.input_tokens is not None and u.cache_read_tokens is not None


def _seed_cut(session: dsh.Session) -> int:
    return len(session.seed_events()) if session.is_child else 0


def _timeline(group: dsh.SessionGroup) -> list[tuple[dsh.Session, dsh.Step]]:
    """Requests of a session group in recorded order: the parent's steps,
    each child's own steps (its copied seed left out) right after the parent
    step whose tool call started it (the call's arguments carry the child's
    first own user message), else after the parent's last step."""
    parent_steps = [(group.parent, s) for s in group.parent.steps()] if group.parent else []
    after: dict[int, list[tuple[dsh.Session, dsh.Step]]] = {}
    for child in group.children:
        own = [(child, s) for s in child.steps() if s.request_index >= _seed_cut(child)]
        slot = len(parent_steps) - 1
        task = _first_user_text(child)
        if task and group.parent:
            for i, (_, ps) in enumerate(parent_steps):
                reply = _reply_message(group.parent, ps)
                if reply and any(task in (c.arguments_json or json.dumps(c.arguments)) for c in reply.tool_calls()):
                    slot = i
                    break
        after.setdefault(slot, []).extend(own)
    ordered: list[tuple[dsh.Session, dsh.Step]] = after.get(-1, [])
    for i, item in enumerate(parent_steps):
        ordered.append(item)
        ordered.extend(after.get(i, []))
    return ordered


def _first_user_text(session: dsh.Session) -> str | None:
    cut = _seed_cut(session)
    for index, message in session._messages:  # noqa: SLF001
        if index >= cut and message is not None and message.role == "user":
            text = message.text()
            return text[:200] if text else None
    return None


def _wire_body(request: Request, render: Render) -> dict[str, Any]:
    return json.loads(render(request))


def calibrate(groups: Sequence[GroupInput], tokenizer: Tokenizer, render: Render,
              cache: CacheModel | None = None) -> Calibration:
    """Predict every recorded DeepSeek request of ``groups`` and compare.

    Per session group (a parent and its children, which share DeepSeek's
    cache), in recorded order: rebuild the request (system prompt and tools
    from the sidecars where they exist), render it with ``render`` (the
    DeepSeek wire dialect), read it through :func:`deepseek_v4_prompt`,
    tokenize, and predict the cached tokens with ``cache`` from the earlier
    requests of the group (each with its reply, from the log). The header
    the logs leave as ``{{system}}``/``{{tools}}`` is known only through
    sidecars written for today's harness, not the recorded one, so each
    distinct header is anchored on its first recorded request: its length
    is set so that request's prompt matches, and every later request of
    that header is a true prediction.
    """
    cache = cache or CalibratedDeepSeekCache()
    results: list[SessionResult] = []
    for gi in groups:
        results.extend(_calibrate_group(gi, tokenizer, render, cache))
    all_steps = [s for r in results for s in r.steps]
    return Calibration(sessions=tuple(results), summary=summarize(all_steps, getattr(cache, "unit", CACHE_UNIT)),
                       cache_model=cache.name, tokenizer=tokenizer.name)


def _header_key(session: dsh.Session, step: dsh.Step, known: Request | None) -> tuple[Any, ...]:
    """Requests with the same key share a header (system prompt and tools):
    the same text where a sidecar gives it; else the same header revision of
    the same session, a forked child counting as its parent (it inherits
    the parent's header with its seed)."""
    if known is not None:
        return ("text", known.system, known.tools)
    revision = step.header.revision if step.header else 0
    fork = session.is_child and session.seed_length is not None
    owner = 0 if (fork or not session.is_child) else session.index
    return ("revision", owner, 0 if fork else revision)


def _calibrate_group(gi: GroupInput, tokenizer: Tokenizer, render: Render,
                     cache: CacheModel) -> list[SessionResult]:
    group = gi.group
    anchors: dict[tuple[Any, ...], tuple[int, int]] = {}  # key -> (anchor id, offset)
    earlier: list[PromptTokens] = []
    per_session: dict[int, list[StepResult]] = {s.index: [] for s in group.sessions()}
    skipped: dict[int, int] = {s.index: 0 for s in group.sessions()}
    for session, step in _timeline(group):
        if not _is_real(step) or step.header is None:
            skipped[session.index] += 1
            continue
        sc = gi.sidecars.get(session.index)
        system = tools = None
        known = sc is not None and sc.system(step.header.revision) is not None and sc.tools(step.header.revision) is not None
        if step.header.system is None and not known:
            system = ""
        if step.header.tools is None and not known:
            tools = ()
        request = dsh.step_request(session, step.turn, step.step, system, tools, sidecars=sc)
        request = Request(route=Route("deepseek", request.route.model), system=request.system,
                          tools=request.tools, messages=request.messages, params=request.params)
        ids = tuple(tokenizer.ids(deepseek_v4_prompt(_wire_body(request, render))))
        absolute = len(ids) if known or (step.header.system is not None and step.header.tools is not None) else None
        usage = step.usage
        assert usage is not None and usage.prompt_tokens is not None
        real_prompt = usage.prompt_tokens
        key = _header_key(session, step, request if known else None)
        is_anchor = key not in anchors
        if is_anchor:
            anchors[key] = (len(anchors) + 1, real_prompt - len(ids))
        anchor_id, offset = anchors[key]
        marker = -anchor_id * 10_000_000
        if offset >= 0:  # an opaque head of the missing length, unique to this header
            tokens = tuple(marker - i for i in range(offset)) + ids
        else:  # the sidecar header is longer than the recorded one: drop its surplus
            tokens = (marker,) + ids[1 - offset:]
        reply = _reply_message(session, step)
        reply_ids: tuple[int, ...] = ()
        if reply is not None:
            wire_reply = _wire_body(Request(route=request.route, messages=(reply,)), render)["messages"][0]
            reply_ids = tuple(tokenizer.ids(deepseek_v4_reply(wire_reply)))
        outcome = cache.predict(earlier, PromptTokens(tokens=tokens))
        earlier.append(PromptTokens(tokens=tokens, output=reply_ids))
        per_session[session.index].append(StepResult(
            session=session.path.name, turn=step.turn, step=step.step,
            real_prompt=real_prompt, real_cached=usage.cache_read_tokens or 0,
            predicted_prompt=len(tokens), predicted_cached=outcome.cached,
            anchor=is_anchor, absolute_prompt=absolute,
            real_output=usage.output_tokens, predicted_output=max(0, len(reply_ids) - 1),
        ))
    out = []
    for session in group.sessions():
        out.append(SessionResult(name=f"{group.name}/{session.path.name}", path=str(session.path),
                                 steps=tuple(per_session[session.index]), skipped=skipped[session.index]))
    return out
