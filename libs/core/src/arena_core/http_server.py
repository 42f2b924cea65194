"""Run an ASGI app with uvicorn, the way every arena service is run.

Shutdown (SIGTERM, or Ctrl-C) is graceful and bounded by ``shutdown_grace_s``
(``ARENA_SHUTDOWN_GRACE_S``):

1. ``GET /readyz`` answers 503 "shutting down" at once (:class:`ShuttingDownReadiness`).
2. With ``on_terminate`` (the orchestrator: its worker stops taking matches, lets running
   ones finish, hands the rest back), the server keeps serving while that runs, at most
   ``shutdown_grace_s`` + :data:`DRAIN_MARGIN_S`: clients and load balancers still get
   answers, and probes see 503, while the endpoint is being removed.
3. Then uvicorn stops accepting connections and gives the requests in flight what is left
   of the grace (at least :data:`MIN_REQUEST_DRAIN_S`); a match streaming from the attacker
   is such a request. Those still running are cancelled: their clients see the connection
   drop (the orchestrator retries such a match).
4. The app's lifespan shutdown runs. After SIGTERM :func:`run_app` returns (the process
   exits 0); after Ctrl-C it raises KeyboardInterrupt, as uvicorn always did (exit 130).

A second signal ends step 2 at once; a second Ctrl-C in step 3 ends it too (uvicorn's rule).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import math
import signal
import socket
import threading
import time
from collections.abc import Awaitable, Callable, Iterator
from dataclasses import dataclass
from types import FrameType

import uvicorn
from starlette.responses import PlainTextResponse
from starlette.types import ASGIApp, Receive, Scope, Send

from arena_core import log_redaction
from arena_core.gc_tuning import tune_for_serving
from arena_core.telemetry.setup import instrument_asgi

DEFAULT_SHUTDOWN_GRACE_S = 25.0
"""The default of ``ARENA_SHUTDOWN_GRACE_S``."""
DRAIN_MARGIN_S = 5.0
"""``on_terminate`` may run this long past the grace (handing work back) before the server stops waiting."""
MIN_REQUEST_DRAIN_S = 1.0
"""Requests in flight when the server stops accepting always get at least this long."""

logger = logging.getLogger(__name__)


def public_url_for(host: str, port: int, configured: str | None) -> str:
    """The URL other agents should use to reach a service.

    ``ARENA_PUBLIC_URL`` wins (set it behind proxies, in compose and in
    Kubernetes). A wildcard bind address falls back to the machine's hostname.
    """
    if configured:
        return configured.rstrip("/")
    if host in ("0.0.0.0", "::", ""):  # noqa: S104 - only used to build a URL
        host = socket.gethostname()
    if ":" in host and not host.startswith("["):
        host = f"[{host}]"
    return f"http://{host}:{port}"


@dataclass
class ShutdownState:
    """Whether a shutdown signal has arrived (shared by the server and the readiness middleware)."""

    terminating: bool = False


class ShuttingDownReadiness:
    """ASGI middleware: once the server is shutting down, ``GET /readyz`` answers 503."""

    def __init__(self, app: ASGIApp, state: ShutdownState) -> None:
        self.app = app
        self.state = state

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if self.state.terminating and scope["type"] == "http" and scope["path"] == "/readyz":
            await PlainTextResponse("shutting down", status_code=503)(scope, receive, send)
            return
        await self.app(scope, receive, send)


class GracefulServer(uvicorn.Server):
    """uvicorn's server with the shutdown described in the module doc."""

    def __init__(
        self,
        config: uvicorn.Config,
        *,
        state: ShutdownState,
        grace_s: float,
        on_terminate: Callable[[], Awaitable[None]] | None = None,
    ) -> None:
        super().__init__(config)
        self._state = state
        self._grace_s = grace_s
        self._on_terminate = on_terminate
        self._signalled_at: float | None = None
        self._draining: asyncio.Task[None] | None = None

    def handle_exit(self, sig: int, frame: FrameType | None) -> None:
        first = not self._state.terminating
        super().handle_exit(sig, frame)  # notes the signal (re-raised once the server has stopped)
        if first:
            self._state.terminating = True
            self._signalled_at = time.monotonic()
            if self._on_terminate is not None:
                # Keep serving while on_terminate drains: on_tick ends the main loop when it is done.
                self.should_exit = False

    async def on_tick(self, counter: int) -> bool:
        if self._on_terminate is not None and self._state.terminating and not self.should_exit:
            if self._draining is None:
                logger.info("shutting down: not ready any more; draining for up to %g s", self._grace_s)
                self._draining = asyncio.create_task(self._run_on_terminate(self._on_terminate))
            waited = time.monotonic() - (self._signalled_at or time.monotonic())
            if self._draining.done() or waited >= self._grace_s + DRAIN_MARGIN_S:
                self.should_exit = True
        return await super().on_tick(counter)

    async def _run_on_terminate(self, on_terminate: Callable[[], Awaitable[None]]) -> None:
        try:
            await on_terminate()
        except Exception:
            logger.exception("draining before shutdown failed")

    async def shutdown(self, sockets: list[socket.socket] | None = None) -> None:
        elapsed = 0.0 if self._signalled_at is None else time.monotonic() - self._signalled_at
        left = max(MIN_REQUEST_DRAIN_S, self._grace_s - elapsed)
        self.config.timeout_graceful_shutdown = math.ceil(left)
        await super().shutdown(sockets)


class _Terminated(SystemExit):
    """A SIGTERM that asked this process to stop: it has stopped, so exit 0."""


@contextlib.contextmanager
def _sigterm_exits_quietly() -> Iterator[None]:
    """uvicorn re-raises the signal that stopped it once it has shut down; for SIGTERM, end
    with exit code 0 (a requested stop that went well) rather than being killed by the signal."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def stop(signum: int, frame: FrameType | None) -> None:
        raise _Terminated(0)

    previous = signal.signal(signal.SIGTERM, stop)
    try:
        yield
    except _Terminated:
        pass
    finally:
        signal.signal(signal.SIGTERM, previous)


def run_app(
    app: ASGIApp,
    *,
    host: str,
    port: int,
    log_level: str = "info",
    shutdown_grace_s: float = DEFAULT_SHUTDOWN_GRACE_S,
    on_terminate: Callable[[], Awaitable[None]] | None = None,
) -> None:
    """Serve ``app`` until SIGINT/SIGTERM, letting uvicorn bind the socket; then shut down
    gracefully within ``shutdown_grace_s`` (see the module doc) and return.

    ``on_terminate`` runs at the first signal, while the server still serves; the server
    stops once it returns (or ``shutdown_grace_s`` + :data:`DRAIN_MARGIN_S` have passed).

    With telemetry configured, the app runs behind the OpenTelemetry ASGI middleware.

    uvicorn binds itself (not a pre-made socket): a socket created with
    protocol 0 silently loses TCP_NODELAY and stalls kept-alive connections.
    """
    state = ShutdownState()
    config = uvicorn.Config(
        instrument_asgi(ShuttingDownReadiness(app, state)),
        host=host,
        port=port,
        log_level=log_level,
        access_log=log_level == "debug",
        lifespan="auto",
        timeout_graceful_shutdown=math.ceil(max(MIN_REQUEST_DRAIN_S, shutdown_grace_s)),
        server_header=False,
    )
    # uvicorn's loggers (just configured by Config) write through handlers of their own.
    log_redaction.install_everywhere()
    server = GracefulServer(config, state=state, grace_s=shutdown_grace_s, on_terminate=on_terminate)
    tune_for_serving()
    with _sigterm_exits_quietly():
        server.run()


__all__ = [
    "DEFAULT_SHUTDOWN_GRACE_S",
    "DRAIN_MARGIN_S",
    "MIN_REQUEST_DRAIN_S",
    "GracefulServer",
    "ShutdownState",
    "ShuttingDownReadiness",
    "public_url_for",
    "run_app",
]
