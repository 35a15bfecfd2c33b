"""Views of results: each result object has ``to_json()`` (its documented
JSON) and, here or beside it, functions that render it for a console,
Markdown, HTML, GitHub annotations or JUnit, writing numbers and escapes
through :mod:`fidelity.formats`. Views of ``DiffResult`` live in
:mod:`fidelity.diff.views`, of a scan in :mod:`fidelity.scan.views`, of a
report in :mod:`fidelity.report`, of a gate in :mod:`fidelity.gate_output`;
the commands' other results (replay, calibration, tokens-check) here."""

__all__: list[str] = []
