"""Parent/child pairs from recorded traffic: a folder of snapshots paired by
what the simulated cache reads (:mod:`.by_cache`) and each pair compared, or
set apart with its reason (:mod:`.folder`). What ``fidelity diff FOLDER`` and
``fidelity gate --snapshots`` show; a sink of the traffic pipeline above
:mod:`fidelity.diff`."""

__all__: list[str] = []
