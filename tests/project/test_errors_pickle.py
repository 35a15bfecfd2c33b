"""Errors cross process boundaries intact (a scan worker's error reaches the command)."""

from __future__ import annotations

import pickle

from hypothesis import given
from hypothesis import strategies as st

from fidelity.capture.redact import MalformedURL
from fidelity.errors import ForkUnavailable, InputError, UnknownName

_TEXT = st.text(max_size=40)


@given(_TEXT, st.one_of(st.none(), _TEXT), st.one_of(st.none(), st.integers(1, 10**6)),
       st.one_of(st.none(), _TEXT))
def test_input_errors_keep_their_message_and_place(problem: str, path: str | None, line: int | None,
                                                    pointer: str | None) -> None:
    err = InputError(problem, path=path, line=line, pointer=pointer)
    back = pickle.loads(pickle.dumps(err))
    assert type(back) is InputError and str(back) == str(err) and vars(back) == vars(err)


def test_every_kind_of_error_comes_back_as_it_was() -> None:
    # UnknownName's constructor takes three arguments: unpickling it by calling the
    # constructor with the message alone failed in the pool's result thread, and the
    # scan waited for ever; InputError came back as "<input>: path: problem"
    for err in (UnknownName("model (no tokenizer)", "m", ["a", "b"]), MalformedURL("port out of range"),
                ForkUnavailable("no completed turn"), InputError("bad", path="a.json", line=2)):
        back = pickle.loads(pickle.dumps(err))
        assert (type(back), str(back), vars(back)) == (type(err), str(err), vars(err))
