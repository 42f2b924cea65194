"""Entry point of ``arena serve attacker``."""

from __future__ import annotations

from arena_attacker.app import create_attacker_app
from arena_core.http_auth import warn_if_open
from arena_core.http_server import public_url_for, run_app
from arena_core.settings import ArenaSettings

DEFAULT_PORT = 8082


def serve_attacker(settings: ArenaSettings, *, host: str = "127.0.0.1", port: int = DEFAULT_PORT) -> None:
    """Serve the attacker until interrupted."""
    warn_if_open(settings.accepted_tokens(), host, "attacker")
    public_url = public_url_for(host, port, settings.public_url)
    run_app(
        create_attacker_app(settings, public_url=public_url),
        host=host,
        port=port,
        log_level=settings.log_level,
        shutdown_grace_s=settings.shutdown_grace_s,
    )


__all__ = ["DEFAULT_PORT", "serve_attacker"]
