"""One segment namer (:func:`fidelity.diff.views.name_segment`) for every
view: the name of each cache-view segment is a path a user finds in the body
(it turns back into the segment's own pointer), and the diff's JSON, its
console lines, the proxy's verdict and the report's "first divergence" cell
all say the same name for the same pair."""

from __future__ import annotations

import json
import re
from dataclasses import replace
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from fidelity import wire
from fidelity.diff import compare
from fidelity.diff import views as diff_views
from fidelity.diff.views import name_segment
from fidelity.jsonbytes import split_pointer
from fidelity.model import Message, Request, Text
from fidelity.proxy.parent import judge
from fidelity.report import _fmt
from fidelity.strategies import requests

DIALECTS = ("openai-chat", "anthropic-messages", "gemini", "openai-responses")


def _body(request: Request, dialect: str) -> bytes | None:
    try:
        return wire.get(dialect).render(request)
    except Exception:  # a dialect that cannot carry the request refuses it
        return None


def _pointer_of(name: str) -> str:
    """The pointer a name stands for: ``tools/0/functionDeclarations[2] (tools)`` -> ``/tools/0/functionDeclarations/2``."""
    path = re.sub(r" \([a-z_]+\)$", "", name)
    return "/" + re.sub(r"\[(\d+)\]", r"/\1", path)


def _resolve(doc: Any, pointer: str) -> Any:
    for token in split_pointer(pointer):
        doc = doc[int(token)] if isinstance(doc, list) else doc[token]
    return doc


@settings(deadline=None)
@given(request=requests(), dialect=st.sampled_from(DIALECTS))
def test_every_segment_is_named_by_a_path_found_in_the_body(request: Request, dialect: str) -> None:
    body = _body(request, dialect)
    if body is None:
        return
    doc = json.loads(body)
    for seg in wire.get(dialect).cache_view(body):
        name = name_segment(seg.kind, seg.index, seg.pointer)
        if seg.pointer == "":
            assert name == "params"
            continue
        assert _pointer_of(name) == seg.pointer, (name, seg.pointer)
        _resolve(doc, seg.pointer)  # raises when the path is not in the body


@settings(deadline=None)
@given(request=requests(), dialect=st.sampled_from(DIALECTS), text=st.text(min_size=1, max_size=8))
def test_diff_and_proxy_name_the_first_divergent_segment_alike(request: Request, dialect: str, text: str) -> None:
    child = replace(request, messages=request.messages + (Message("user", (Text(text),)),))
    if request.messages:  # a changed first message breaks the history at its start
        first = request.messages[0]
        child = replace(request, messages=(replace(first, parts=(Text(text + "!"),) + first.parts),)
                        + request.messages[1:])
    parent_body, child_body = _body(request, dialect), _body(child, dialect)
    if parent_body is None or child_body is None:
        return
    model = request.route.model  # a Gemini body names its model in the URL only
    result = compare(parent_body, child_body, dialect=dialect, model=model)
    name = diff_views.segment_name(result)
    segment = diff_views.to_json(result)["cache_view"]["segment"]
    assert (segment or {}).get("name") == name
    assert judge(parent_body, child_body, dialect, model=model).segment == name
    if name is not None:
        assert any(f"segment {name}," in value for _, value in diff_views.fields(result))
        row = {"divergence": {"first_divergent_byte": result.view.first_divergent_byte, "segment": segment}}
        assert _fmt.where(row) == f"byte {result.view.first_divergent_byte:,} in {name}"


# the cases where the report's and the diff's namers used to disagree, and common ones
CASES = [
    ("system", 0, "/system", "system"),  # a string system prompt (Anthropic)
    ("system", 0, "/system/0", "system[0]"),  # a list of system blocks
    ("tools", 2, "/tools/0/functionDeclarations/2", "tools/0/functionDeclarations[2] (tools)"),  # Gemini
    ("system", 0, "/messages/0", "messages[0] (system)"),  # OpenAI's system message
    ("message", 3, "/messages/3", "messages[3]"),
    ("tools", 1, "/tools/1", "tools[1]"),
    ("system", 0, "/systemInstruction", "systemInstruction (system)"),
    ("params", 0, "", "params"),
    ("message", 4, None, "message[4]"),
]


def test_the_names_of_each_kind_of_segment() -> None:
    assert [name_segment(k, i, p) for k, i, p, _ in CASES] == [want for *_, want in CASES]
