"""Running one service in the foreground: the generic half of ``arena-<name>`` and ``arena serve <name>``.

Each service package has a ``main`` module holding a :class:`ServiceRunner` and its console script
(``arena_defender.main:main`` and so on); ``arena serve <name>`` calls the same runner's
:meth:`~ServiceRunner.run`. This module names no service: a library never imports the apps built on it.

The order matters: telemetry is set up before the service's server module is imported, because that
import pulls in a2a-sdk and the other agent libraries (see :mod:`arena_core.telemetry`). So a runner
gets a function that *loads* the server, and each service's ``__init__`` imports nothing heavy.

The console script (:meth:`ServiceRunner.main`) adds what an image needs: ``--host``/``--port``;
bad options or settings print one line on stderr and exit non-zero, never a traceback. SIGTERM
(what Kubernetes and Compose send) is a graceful stop: the server gives the work in flight
``ARENA_SHUTDOWN_GRACE_S`` (see :func:`arena_core.http_server.run_app`), and the process then exits 0.
A SIGTERM while the service is still starting exits 0 at once: in a container the process is often
PID 1, which the kernel never kills for a signal it has no handler for, so without one a pod being
stopped during start-up would wait for SIGKILL. Ctrl-C exits 130.
"""

from __future__ import annotations

import argparse
import logging
import signal
import sys
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from types import FrameType
from typing import NoReturn, Protocol

from arena_core import log_redaction
from arena_core.errors import ArenaError
from arena_core.settings import ArenaSettings, load_settings

LOOPBACK = "127.0.0.1"
"""The default bind address: a service is reachable from other hosts only when asked (0.0.0.0)."""


class Serve(Protocol):
    """A service's server: serve with ``settings`` on ``host:port`` until stopped (blocks)."""

    def __call__(self, settings: ArenaSettings, *, host: str, port: int) -> None: ...


def configure_logging(settings: ArenaSettings) -> None:
    """Root logging at ``ARENA_LOG_LEVEL``, one line per record."""
    logging.basicConfig(
        level=settings.log_level.upper(), format="%(asctime)s %(levelname)s %(name)s: %(message)s"
    )
    # Libraries log request headers at DEBUG: no credential may reach a log line.
    log_redaction.install(logging.getLogger().handlers)
    if settings.log_level != "debug":
        # One line per HTTP request drowns the match on the console.
        for noisy in ("httpx", "httpx2"):  # httpx2: the HTTP client under the openai SDK
            logging.getLogger(noisy).setLevel(logging.WARNING)


def settings_from_environment(**overrides: object) -> ArenaSettings:
    """``ARENA_*`` read once with ``overrides`` on top (``None``: not given), and logging configured.

    Raises:
        ConfigError: naming every invalid setting.
    """
    settings = load_settings(**{key: value for key, value in overrides.items() if value is not None})
    configure_logging(settings)
    return settings


def _port(raw: str) -> int:
    try:
        port = int(raw)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a port number: {raw!r}") from None
    if not 0 <= port <= 65535:
        raise argparse.ArgumentTypeError(f"port must be 0-65535, got {port}")
    return port


def _exit_on_sigterm(signum: int, frame: FrameType | None) -> None:
    """SIGTERM outside the server's own handling (starting up, or re-raised by uvicorn once it has
    stopped gracefully): a requested stop, so exit 0."""
    raise SystemExit(0)


def _fail(prog: str, message: str, code: int) -> NoReturn:
    print(f"{prog}: error: {message}", file=sys.stderr)  # noqa: T201
    raise SystemExit(code)


@dataclass(frozen=True, slots=True)
class ServiceRunner:
    """How one service is run in the foreground.

    ``load_server`` imports the service's server module and returns its serve function; it is
    called only once telemetry is set up.
    """

    name: str
    default_port: int
    load_server: Callable[[], Serve]

    def run(self, *, host: str = LOOPBACK, port: int | None = None, **settings_overrides: object) -> None:
        """Set up telemetry, settings (``settings_overrides`` on top of ``ARENA_*``) and logging,
        then serve until stopped (blocks). ``arena serve <name>`` calls this.

        Raises:
            ArenaError: invalid settings, or the service could not start.
            OSError: the address could not be bound (e.g. the port is taken).
        """
        from arena_core.telemetry import configure_telemetry

        configure_telemetry(self.name)
        settings = settings_from_environment(**settings_overrides)
        self.load_server()(settings, host=host, port=self.default_port if port is None else port)

    def main(self, argv: Sequence[str] | None = None) -> None:
        """The ``arena-<name>`` console script: parse ``--host``/``--port``, then :meth:`run`.

        Exits 0 after SIGTERM, 130 after Ctrl-C, and with the error's exit code (after one line
        on stderr) when the options, the settings or the start fail.
        """
        prog = f"arena-{self.name}"
        args = self._parser(prog).parse_args(argv)
        if threading.current_thread() is threading.main_thread():
            signal.signal(signal.SIGTERM, _exit_on_sigterm)
        try:
            self.run(host=args.host, port=args.port)
        except ArenaError as exc:
            _fail(prog, exc.message, exc.exit_code)
        except KeyboardInterrupt:
            raise SystemExit(130) from None
        except OSError as exc:  # e.g. the port is taken
            _fail(prog, str(exc), 1)

    def _parser(self, prog: str) -> argparse.ArgumentParser:
        parser = argparse.ArgumentParser(
            prog=prog,
            description=(
                f"Run the A2A Arena {self.name} service in the foreground (SIGTERM or Ctrl-C stops it). "
                "Every other setting comes from ARENA_* environment variables (see deploy/.env.example)."
            ),
        )
        parser.add_argument("--host", default=LOOPBACK, help="address to bind (0.0.0.0 for all interfaces)")
        parser.add_argument(
            "--port", type=_port, default=self.default_port, help=f"port (default {self.default_port})"
        )
        return parser


__all__ = ["LOOPBACK", "Serve", "ServiceRunner", "configure_logging", "settings_from_environment"]
