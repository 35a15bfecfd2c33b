"""Calibrate the DeepSeek prompt and cache model against real provider usage:
each recorded DeepSeek Harness request is rebuilt, rendered through the V4 chat
template, tokenized and simulated in recorded order, and :class:`Calibration`
compares prediction and report step by step. Only the ``{{cwd}}`` stand-in,
header anchoring and the comparison live here. Method: docs/calibration.md."""

from __future__ import annotations

import json
import statistics
from array import array
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from . import cache as cache_models
from .cache import DEEPSEEK_UNIT, CacheModel, PromptTokens
from .cache.simulator import simulated
from .errors import InputError
from .model import Request, Route
from .sources import dsh
from .stats import percentile
from .tokens import Tokenizer
from .wire.deepseek import deepseek_v4_prompt, deepseek_v4_reply

__all__ = [
    "CWD_PLACEHOLDER",
    "CWD_STANDIN",
    "prompt_text",
    "reply_text",
    "GroupInput",
    "load",
    "StepResult",
    "SessionResult",
    "Summary",
    "Calibration",
    "calibrate",
    "summarize",
]

# --------------------------------------------------------------------------- the recorded logs

#: The log's working-directory placeholder, and a stand-in path of the tokens
#: it cost (docs/calibration.md, finding 6)
CWD_PLACEHOLDER = "{{cwd}}"
CWD_STANDIN = "/private/var/folders/7q/kx0bz3yd1v5gh9jw2lt8m4rc0000gn/T/dsh-acp-8Rk2vQ"


def prompt_text(body: Mapping[str, Any]) -> str:
    """The prompt DeepSeek V4 read for a recorded request body, ``{{cwd}}`` replaced."""
    return deepseek_v4_prompt(body).replace(CWD_PLACEHOLDER, CWD_STANDIN)


def reply_text(message: Mapping[str, Any]) -> str:
    """The reply the model generated for a recorded assistant message, ``{{cwd}}`` replaced."""
    return deepseek_v4_reply(message).replace(CWD_PLACEHOLDER, CWD_STANDIN)


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
    ``anchor``: the step fixes its header's unknown length (prompt error 0 by
    construction, left out of the prompt-error figures); ``absolute_prompt``:
    the prediction without anchoring, where a sidecar gives the header."""

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
    cache_model: str = "deepseek"
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


def summarize(steps: Sequence[StepResult], unit: int = DEEPSEEK_UNIT) -> Summary:
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
        prompt_error_p95=percentile(prompt, 95) if prompt else 0.0,
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
                reply = dsh.step_reply(group.parent, ps.turn, ps.step)
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
    for index, message in session.surface_messages():
        if index >= cut and message.role == "user":
            text = message.text()
            return text[:200] if text else None
    return None


def load(path: str | Path) -> list[GroupInput]:
    """Every session group under ``path`` with its resolved sidecars."""
    groups = dsh.find_sessions(path)
    if not groups:
        raise InputError("no session*.jsonl under this folder", path=path)
    out = []
    for group in groups:
        sidecars = {}
        for session in group.sessions():
            sc = dsh.sidecars(group.directory, child=session.index or None)
            has = sc.system_path is not None or sc.tools_path is not None
            sidecars[session.index] = sc if has else None
        out.append(GroupInput(group=group, sidecars=sidecars))
    return out


def calibrate(groups: Sequence[GroupInput], tokenizer: Tokenizer, render: Render,
              cache: CacheModel | None = None, *, header_shift: int = 0) -> Calibration:
    """Predict every recorded DeepSeek request of ``groups`` in recorded order
    (``cache``: DeepSeek's by default) and compare; each distinct header is
    anchored on its first request, ``header_shift`` tokens added to its length."""
    cache = cache or cache_models.for_provider("deepseek")
    results: list[SessionResult] = []
    for gi in groups:
        results.extend(_calibrate_group(gi, tokenizer, render, cache, header_shift))
    all_steps = [s for r in results for s in r.steps]
    return Calibration(sessions=tuple(results), summary=summarize(all_steps, getattr(cache, "unit", DEEPSEEK_UNIT)),
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
                     cache: CacheModel, header_shift: int = 0) -> list[SessionResult]:
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
        request = replace(request, route=Route("deepseek", request.route.model))
        ids = tokenizer.ids(prompt_text(json.loads(render(request))))  # array('q'), read-only
        absolute = len(ids) if known or (step.header.system is not None and step.header.tools is not None) else None
        usage = step.usage
        if usage is None or usage.prompt_tokens is None:  # _is_real checked it; a step without a count is skipped
            skipped[session.index] += 1
            continue
        real_prompt = usage.prompt_tokens
        key = _header_key(session, step, request if known else None)
        is_anchor = key not in anchors
        if is_anchor:
            anchors[key] = (len(anchors) + 1, real_prompt - len(ids) + header_shift)
        anchor_id, offset = anchors[key]
        marker = -anchor_id * 10_000_000
        if offset >= 0:  # an opaque head of the missing length, unique to this header
            tokens = array("q", range(marker, marker - offset, -1)) + ids
        else:  # the sidecar header is longer than the recorded one: drop its surplus
            tokens = array("q", (marker,)) + ids[1 - offset:]
        reply = dsh.step_reply(session, step.turn, step.step)
        reply_ids: Sequence[int] = ()
        if reply is not None:
            wire_reply = json.loads(render(Request(route=request.route, messages=(reply,))))["messages"][0]
            reply_ids = tokenizer.ids(reply_text(wire_reply))
        outcome = simulated(cache, earlier, PromptTokens(tokens=tokens))  # the one cache computation
        earlier.append(PromptTokens(tokens=tokens, output=reply_ids))
        per_session[session.index].append(StepResult(
            session=session.path.name, turn=step.turn, step=step.step,
            real_prompt=real_prompt, real_cached=usage.cache_read_tokens or 0,
            predicted_prompt=len(tokens), predicted_cached=outcome.cache_read or 0,
            anchor=is_anchor, absolute_prompt=absolute,
            real_output=usage.output_tokens, predicted_output=max(0, len(reply_ids) - 1),
        ))
    return [SessionResult(name=f"{group.name}/{session.path.name}", path=str(session.path),
                          steps=tuple(per_session[session.index]), skipped=skipped[session.index])
            for session in group.sessions()]
