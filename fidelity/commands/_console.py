"""The console commands print to."""

from rich.console import Console

__all__ = ["stdout_console"]


class StdoutConsole(Console):
    """A rich console whose closed pipe raises :class:`BrokenPipeError` to the CLI
    (exit 0) instead of rich's ``SystemExit(1)`` (1 means "regression" to the gate)."""

    def on_broken_pipe(self) -> None:
        self.quiet = True
        raise BrokenPipeError


def stdout_console() -> StdoutConsole:
    """A rich console on stdout, 160 columns wide when stdout is a log or a pipe."""
    console = StdoutConsole()
    return console if console.is_terminal else StdoutConsole(width=160)
