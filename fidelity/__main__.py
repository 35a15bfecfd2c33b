from ._entry import run

__all__: list[str] = []

run()
