"""Console views of the commands' results (replay, calibration, tokens-check);
each result's JSON view is its ``to_json()``, and figures and escapes go through
:mod:`fidelity.formats`. Other views sit beside their results (:mod:`fidelity.diff.views`,
:mod:`fidelity.scan.views`, :mod:`fidelity.report`, :mod:`fidelity.gate_output`)."""

__all__: list[str] = []
