"""What every ``arena`` sub-command shares: the consoles, telemetry, error lines and SIGTERM.

Settings come from :func:`arena_core.service_runner.settings_from_environment`, which the services'
entry points use too. The command modules (:mod:`arena.cli`, :mod:`arena.campaign_cli`) import
this one, and it imports none of them: the CLI's modules never import each other in a circle.
"""

from __future__ import annotations

import asyncio
import signal
import sys
from collections.abc import Coroutine
from dataclasses import dataclass
from types import FrameType
from typing import Any, NoReturn, TypeVar

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


_T = TypeVar("_T")


@dataclass
class _MainTask:
    """The main task of :func:`run`, for SIGTERM to cancel where asyncio did not take over SIGINT."""

    task: asyncio.Task[Any] | None = None
    loop: asyncio.AbstractEventLoop | None = None
    interrupted: bool = False

    def cancel(self) -> bool:
        """Cancel the main task as asyncio's Ctrl-C does (once; a second signal is refused)."""
        if self.interrupted or self.task is None or self.loop is None or self.task.done():
            return False
        self.interrupted = True
        self.task.cancel()
        self.loop.call_soon_threadsafe(lambda: None)  # wake the loop from its wait
        return True


_main = _MainTask()


def run(main: Coroutine[Any, Any, _T]) -> _T:
    """``asyncio.run(main)``, and SIGTERM cancels ``main`` as Ctrl-C does (see
    :func:`interrupt_on_sigterm`), also in a process started with SIGINT ignored.

    A command started in the background by a non-interactive shell (``cmd &``, ``nohup``)
    inherits SIGINT ignored; asyncio then installs no SIGINT handler of its own, and a
    KeyboardInterrupt raised from a signal handler would stop the loop wherever it stood,
    without the cancellation that lets a command stop its children and keep what it played.
    """
    global _main
    state = _MainTask()

    async def tracked() -> _T:
        state.task = asyncio.current_task()
        state.loop = asyncio.get_running_loop()
        return await main

    _main = state
    try:
        return asyncio.run(tracked())
    except asyncio.CancelledError:
        if state.interrupted:
            raise KeyboardInterrupt from None
        raise
    finally:
        _main = _MainTask()


def interrupt_on_sigterm() -> None:
    """Make SIGTERM stop a command as Ctrl-C does, so that it stops its child processes, or
    cancels its campaign and keeps what was played; the default handler would skip that cleanup.

    Inside ``asyncio.run`` Ctrl-C cancels the main task (so it can clean up), which a
    KeyboardInterrupt raised from a signal handler would not: SIGTERM then calls that same SIGINT
    handler. Where asyncio installed none (SIGINT was ignored at start), SIGTERM cancels the main
    task of :func:`run` itself. Elsewhere it raises KeyboardInterrupt.
    """

    def handler(signum: int, frame: FrameType | None) -> None:
        on_sigint = signal.getsignal(signal.SIGINT)
        if callable(on_sigint) and on_sigint is not signal.default_int_handler:
            on_sigint(signal.SIGINT, frame)  # asyncio.run's: cancel the main task, as Ctrl-C does
            return
        if _main.cancel():
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
    "run",
    "start_telemetry",
]
