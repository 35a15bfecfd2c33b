"""Views of the commands' results (replay, calibration, tokens-check), written
through :mod:`fidelity.formats`; the other views sit beside their results
(:mod:`fidelity.diff.views`, :mod:`fidelity.scan.views`,
:mod:`fidelity.report`, :mod:`fidelity.gate_output`)."""

__all__: list[str] = []
