"""The console commands print to."""

from rich.console import Console

__all__ = ["stdout_console"]


def stdout_console() -> Console:
    """A rich console on stdout; when stdout is a log or a pipe, wide enough
    (160 columns) that tables are not squeezed into rich's default 80."""
    console = Console()
    return console if console.is_terminal else Console(width=160)
