"""Serve an ASGI app with uvicorn in the test's own event loop, on a bound loopback socket.

Bind first with :func:`bound_socket` (port 0: the kernel picks a free one), so a test can learn
its URL (:func:`socket_url`) before building an app that needs it (an agent card names its own
URL), then serve with :func:`serve_app` (yields the URL) or :func:`uvicorn_server` (yields the
``uvicorn.Server``, for tests that look at its connections). Either waits until the server
listens, fails after 5 s or as soon as uvicorn gives up, and on exit stops the server (in-flight
requests get 2 s), waits up to 10 s for it and closes the socket.
"""

from __future__ import annotations

import asyncio
import contextlib
import socket
import time
from collections.abc import AsyncIterator, Callable

import uvicorn
from starlette.types import ASGIApp

START_TIMEOUT_S = 5.0
STOP_TIMEOUT_S = 10.0


def bound_socket(host: str = "127.0.0.1", port: int = 0, *, reuse_address: bool = False) -> socket.socket:
    """A TCP socket bound to ``host:port`` (not listening yet: uvicorn does that).

    IPPROTO_TCP, not 0: asyncio sets TCP_NODELAY only on sockets whose protocol says TCP
    (otherwise small writes can stall 40 ms on delayed ACKs).
    """
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM, socket.IPPROTO_TCP)
    try:
        if reuse_address:
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind((host, port))
    except BaseException:
        sock.close()
        raise
    return sock


def socket_url(sock: socket.socket) -> str:
    """``http://host:port`` of the bound socket ``sock``."""
    host, port = sock.getsockname()[:2]
    return f"http://{host}:{port}"


@contextlib.asynccontextmanager
async def uvicorn_server(
    app: ASGIApp,
    sock: socket.socket,
    *,
    what: str = "the test server",
    before_stop: Callable[[], object] | None = None,
) -> AsyncIterator[uvicorn.Server]:
    """Serve ``app`` on ``sock`` (lifespan off) until the block ends; yields the running server.

    ``what`` names the server in the failure when it does not start. ``before_stop`` runs when
    the block ends, before the server is told to stop: to release requests the test holds, which
    would otherwise keep the graceful shutdown waiting.
    """
    server = uvicorn.Server(
        uvicorn.Config(app, log_level="warning", lifespan="off", timeout_graceful_shutdown=2)
    )
    serving = asyncio.create_task(server.serve(sockets=[sock]))
    try:
        deadline = time.monotonic() + START_TIMEOUT_S
        while not server.started:
            if serving.done() or time.monotonic() > deadline:
                raise AssertionError(f"{what} did not start")
            await asyncio.sleep(0.01)
        yield server
    finally:
        try:
            if before_stop is not None:
                before_stop()
        finally:
            server.should_exit = True
            try:
                await asyncio.wait_for(serving, STOP_TIMEOUT_S)
            finally:
                sock.close()


@contextlib.asynccontextmanager
async def serve_app(
    app: ASGIApp,
    sock: socket.socket,
    *,
    what: str = "the test server",
    before_stop: Callable[[], object] | None = None,
) -> AsyncIterator[str]:
    """Serve ``app`` on ``sock`` until the block ends (see :func:`uvicorn_server`); yields its URL."""
    async with uvicorn_server(app, sock, what=what, before_stop=before_stop):
        yield socket_url(sock)
