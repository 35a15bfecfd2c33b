"""``compare`` and ``compare_views`` take one keyword list (:class:`CompareOptions`)."""

from __future__ import annotations

import pytest

from fidelity.diff import compare
from fidelity.diff._compare import CompareOptions, compare_views

BODY = b'{"model":"gpt-4o","messages":[{"role":"user","content":"hi"}]}'


def test_compare_is_the_first_of_compare_views() -> None:
    result, p_segs, c_segs = compare_views(BODY, BODY, dialect="openai-chat")
    assert compare(BODY, BODY, dialect="openai-chat") == result
    assert p_segs == c_segs and p_segs


def test_an_unknown_keyword_is_refused() -> None:
    with pytest.raises(TypeError, match="dialekt"):
        compare(BODY, BODY, dialekt="openai-chat")  # type: ignore[call-arg]
    assert set(CompareOptions.__annotations__) >= {"dialect", "model", "endpoint", "times"}
