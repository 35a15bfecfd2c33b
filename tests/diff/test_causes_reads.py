"""The cause of a break is named from the few segments it concerns: a
sequence that gives its kinds (the scan's segments, whose bytes come from a
file) has only those segments' bytes read, and the cause is the one a plain
list of the same segments gets."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Any

import pytest

from fidelity.diff.causes import classify
from fidelity.wire import Segment


class _Counted(Sequence[Segment]):
    """Segments whose bytes are counted as they are read."""

    def __init__(self, segs: list[Segment]) -> None:
        self._segs = segs
        self.reads = 0

    def __len__(self) -> int:
        return len(self._segs)

    def __getitem__(self, i: Any) -> Any:
        self.reads += 1
        return self._segs[i]

    def __iter__(self) -> Iterator[Segment]:
        for s in self._segs:
            self.reads += 1
            yield s

    @property
    def kinds(self) -> list[str]:
        return [s.kind for s in self._segs]


def _request(n_messages: int, system: list[bytes], tools: list[bytes], edit: int | None = None) -> list[Segment]:
    segs = [Segment("params", 0, "", b'"model":"m"')]
    segs += [Segment("tools", i, f"/tools/{i}", t) for i, t in enumerate(tools)]
    segs += [Segment("system", i, f"/system/{i}", t) for i, t in enumerate(system)]
    for i in range(n_messages):
        text = b'{"role":"user","content":"turn %d%s"}' % (i, b" edited" if i == edit else b"")
        segs.append(Segment("message", i, f"/messages/{i}", text))
    return segs


TOOLS = [b'{"name":"a","input_schema":{}}', b'{"name":"b","input_schema":{}}']


@pytest.mark.parametrize("case", ["system edited", "system added", "tool added", "message edited",
                                  "message removed"])
def test_cause_reads_only_the_segments_it_names(case: str) -> None:
    p = _request(200, [b'"You help."'], TOOLS)
    if case == "system edited":
        c = _request(200, [b'"You help at 12:01."'], TOOLS)
    elif case == "system added":
        c = _request(200, [b'"You help."', b'"Be brief."'], TOOLS)
    elif case == "tool added":
        c = _request(200, [b'"You help."'], [*TOOLS, b'{"name":"c","input_schema":{}}'])
    elif case == "message edited":
        c = _request(200, [b'"You help."'], TOOLS, edit=150)
    else:
        c = p[:100] + p[101:]
    split = next(i for i, (a, b) in enumerate(zip(p, c)) if a != b)
    want = classify(p, c, split)
    cp, cc = _Counted(p), _Counted(c)
    got = classify(cp, cc, split)
    assert (got.kind, got.detail) == (want.kind, want.detail)
    assert cp.reads + cc.reads <= 12, (case, cp.reads, cc.reads)
