"""The console commands print to."""

from rich.console import Console

__all__ = ["stdout_console"]


class StdoutConsole(Console):
    """A rich console for a command's output. A reader that goes away
    (``fidelity report | head``) raises :class:`BrokenPipeError` to the CLI,
    which ends the run quietly with exit 0; rich's own default is
    ``SystemExit(1)``, and 1 means "regression" to ``fidelity gate``."""

    def on_broken_pipe(self) -> None:
        self.quiet = True
        raise BrokenPipeError


def stdout_console() -> StdoutConsole:
    """A rich console on stdout; when stdout is a log or a pipe, wide enough
    (160 columns) that tables are not squeezed into rich's default 80."""
    console = StdoutConsole()
    return console if console.is_terminal else StdoutConsole(width=160)
