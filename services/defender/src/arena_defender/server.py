"""The defender's server: ``serve_defender`` (run by :mod:`arena_defender.main`)."""

from __future__ import annotations

from arena_core.a2a.agent_app import serve_agent
from arena_core.service_ports import DEFENDER_PORT
from arena_core.settings import ArenaSettings
from arena_defender.app import create_defender_app

DEFAULT_PORT = DEFENDER_PORT


def serve_defender(settings: ArenaSettings, *, host: str = "127.0.0.1", port: int = DEFAULT_PORT) -> None:
    """Serve the defender until interrupted."""
    serve_agent(
        settings,
        lambda public_url: create_defender_app(settings, public_url=public_url),
        role="defender",
        host=host,
        port=port,
    )


__all__ = ["DEFAULT_PORT", "serve_defender"]
