"""Console scripts of the service images: ``arena-defender``, ``arena-attacker``, ``arena-orchestrator``
and ``arena-model``.

Each image carries one service package, not the ``arena`` CLI; these entry points do what
``arena serve <name>`` does: logging, telemetry (set up before the service and its agent libraries
are imported, see :mod:`arena_core.telemetry`), settings from the ``ARENA_*`` environment, then
serve until SIGTERM or Ctrl-C. They live here, not in the service packages, because importing a
service package imports a2a-sdk, which must come after telemetry. Bad options or settings print one
line on stderr and exit non-zero; never a traceback.

SIGTERM (what Kubernetes and Compose send) is a graceful stop: the server gives the work in
flight ``ARENA_SHUTDOWN_GRACE_S`` (see :func:`arena_core.http_server.run_app`), and the process
then exits 0. A SIGTERM while the service is still starting exits 0 at once: in a container the
process is often PID 1, which the kernel never kills for a signal it has no handler for, so
without one a pod being stopped during start-up would wait for SIGKILL. Ctrl-C exits 130.
"""

from __future__ import annotations

import argparse
import logging
import signal
import sys
import threading
from collections.abc import Callable, Sequence
from types import FrameType
from typing import NoReturn

from arena_core import log_redaction
from arena_core.errors import ArenaError
from arena_core.settings import ArenaSettings, load_settings

Serve = Callable[[ArenaSettings, str, int], None]


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


def run_service(
    service: str,
    *,
    default_port: int,
    load_serve: Callable[[], Serve],
    argv: Sequence[str] | None = None,
) -> None:
    """Parse ``--host``/``--port``, set up telemetry and logging, then serve (blocks).

    ``load_serve`` imports the service lazily, after telemetry is configured.
    """
    prog = f"arena-{service}"
    parser = argparse.ArgumentParser(
        prog=prog,
        description=(
            f"Run the A2A Arena {service} service in the foreground (SIGTERM or Ctrl-C stops it). "
            "Every other setting comes from ARENA_* environment variables (see deploy/.env.example)."
        ),
    )
    parser.add_argument("--host", default="127.0.0.1", help="address to bind (0.0.0.0 for all interfaces)")
    parser.add_argument("--port", type=_port, default=default_port, help=f"port (default {default_port})")
    args = parser.parse_args(argv)
    if threading.current_thread() is threading.main_thread():
        signal.signal(signal.SIGTERM, _exit_on_sigterm)
    try:
        from arena_core.telemetry import configure_telemetry

        configure_telemetry(service)
        settings = load_settings()
        configure_logging(settings)
        load_serve()(settings, args.host, args.port)
    except ArenaError as exc:
        _fail(prog, exc.message, exc.exit_code)
    except KeyboardInterrupt:
        raise SystemExit(130) from None
    except OSError as exc:  # e.g. the port is taken
        _fail(prog, str(exc), 1)


def _defender() -> Serve:
    from arena_defender import serve_defender

    return lambda settings, host, port: serve_defender(settings, host=host, port=port)


def _attacker() -> Serve:
    from arena_attacker import serve_attacker

    return lambda settings, host, port: serve_attacker(settings, host=host, port=port)


def _orchestrator() -> Serve:
    from arena_orchestrator import serve_orchestrator

    return lambda settings, host, port: serve_orchestrator(settings, host=host, port=port)


def _model() -> Serve:
    from arena_model import serve_model_with_settings

    return lambda settings, host, port: serve_model_with_settings(settings, host=host, port=port)


def defender_main(argv: Sequence[str] | None = None) -> None:
    """``arena-defender``: the defender A2A agent (port 8081)."""
    run_service("defender", default_port=8081, load_serve=_defender, argv=argv)


def attacker_main(argv: Sequence[str] | None = None) -> None:
    """``arena-attacker``: the attacker A2A agent (port 8082)."""
    run_service("attacker", default_port=8082, load_serve=_attacker, argv=argv)


def orchestrator_main(argv: Sequence[str] | None = None) -> None:
    """``arena-orchestrator``: campaigns API, workers and dashboard (port 8080)."""
    run_service("orchestrator", default_port=8080, load_serve=_orchestrator, argv=argv)


def model_main(argv: Sequence[str] | None = None) -> None:
    """``arena-model``: the embedded OpenAI-compatible model server (port 8090)."""
    run_service("model", default_port=8090, load_serve=_model, argv=argv)


__all__ = [
    "attacker_main",
    "configure_logging",
    "defender_main",
    "model_main",
    "orchestrator_main",
    "run_service",
]
