"""Views of the commands' results (replay, calibration, tokens-check). Every
result a command prints has one JSON view (its ``to_json()``, written by
:func:`fidelity.formats.json_doc`), and each other view (console, Markdown,
HTML, GitHub annotations, JUnit) writes its figures and escapes through
:mod:`fidelity.formats`. The other views sit beside their results
(:mod:`fidelity.diff.views`, :mod:`fidelity.scan.views`,
:mod:`fidelity.report`, :mod:`fidelity.gate_output`)."""

__all__: list[str] = []
