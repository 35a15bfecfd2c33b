"""Command modules of the CLI, one per command, imported on demand by ``fidelity.cli``."""

__all__: list[str] = []
