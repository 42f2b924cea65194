"""Run an ASGI app with uvicorn, the way every arena service is run."""

from __future__ import annotations

import socket

import uvicorn
from starlette.types import ASGIApp

from arena_core.telemetry.setup import instrument_asgi


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


def run_app(app: ASGIApp, *, host: str, port: int, log_level: str = "info") -> None:
    """Serve ``app`` until SIGINT/SIGTERM, letting uvicorn bind the socket.

    With telemetry configured, the app runs behind the OpenTelemetry ASGI middleware.

    uvicorn binds itself (not a pre-made socket): a socket created with
    protocol 0 silently loses TCP_NODELAY and stalls kept-alive connections.
    """
    config = uvicorn.Config(
        instrument_asgi(app),
        host=host,
        port=port,
        log_level=log_level,
        access_log=log_level == "debug",
        lifespan="auto",
        timeout_graceful_shutdown=10,
        server_header=False,
    )
    uvicorn.Server(config).run()


__all__ = ["public_url_for", "run_app"]
