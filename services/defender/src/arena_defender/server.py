"""Entry point of ``arena serve defender``."""

from __future__ import annotations

from arena_core.http_auth import warn_if_open
from arena_core.http_server import public_url_for, run_app
from arena_core.settings import ArenaSettings
from arena_defender.app import create_defender_app

DEFAULT_PORT = 8081


def serve_defender(settings: ArenaSettings, *, host: str = "127.0.0.1", port: int = DEFAULT_PORT) -> None:
    """Serve the defender until interrupted."""
    warn_if_open(settings.accepted_tokens(), host, "defender")
    public_url = public_url_for(host, port, settings.public_url)
    run_app(
        create_defender_app(settings, public_url=public_url),
        host=host,
        port=port,
        log_level=settings.log_level,
        shutdown_grace_s=settings.shutdown_grace_s,
    )


__all__ = ["DEFAULT_PORT", "serve_defender"]
