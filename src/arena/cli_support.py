"""What every ``arena`` sub-command shares: the consoles, telemetry, error lines and SIGTERM.

Settings come from :func:`arena_core.service_runner.settings_from_environment`, which the services'
entry points use too. The command modules (:mod:`arena.cli`, :mod:`arena.campaign_cli`) import
this one, and it imports none of them: the CLI's modules never import each other in a circle.
"""

from __future__ import annotations

import signal
import sys
from types import FrameType
from typing import NoReturn

from rich.console import Console
from rich.text import Text

console = Console()
"""Standard output: what a command reports."""
err_console = Console(stderr=True, soft_wrap=True)
"""Standard error: errors, progress and notes that must not mix with machine-readable output."""


def start_telemetry(service: str) -> None:
    """Set up OpenTelemetry as ``service``, before the agent libraries are imported
    (see :mod:`arena_core.telemetry`)."""
    from arena_core.telemetry import configure_telemetry

    configure_telemetry(service)


def interrupt_on_sigterm() -> None:
    """Make SIGTERM stop a command as Ctrl-C does, so that it stops its child processes, or
    cancels its campaign and keeps what was played; the default handler would skip that cleanup.

    Inside ``asyncio.run`` Ctrl-C cancels the main task (so it can clean up), which a
    KeyboardInterrupt raised from a signal handler would not: SIGTERM then calls that same SIGINT
    handler. Elsewhere it raises KeyboardInterrupt.
    """

    def handler(signum: int, frame: FrameType | None) -> None:
        on_sigint = signal.getsignal(signal.SIGINT)
        if callable(on_sigint) and on_sigint is not signal.default_int_handler:
            on_sigint(signal.SIGINT, frame)  # asyncio.run's: cancel the main task, as Ctrl-C does
            return
        raise KeyboardInterrupt

    signal.signal(signal.SIGTERM, handler)


def print_error(message: str) -> None:
    """One ``error: ...`` line on stderr."""
    # Text, not markup: messages quote user input and provider errors such as "[gemini] ...".
    err_console.print(Text.assemble(("error: ", "bold red"), message), highlight=False)


def fail(message: str, code: int) -> NoReturn:
    """Print ``message`` as an error line and exit with ``code``."""
    print_error(message)
    sys.exit(code)


__all__ = [
    "console",
    "err_console",
    "fail",
    "interrupt_on_sigterm",
    "print_error",
    "start_telemetry",
]
