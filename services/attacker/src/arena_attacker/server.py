"""The attacker's server: ``serve_attacker`` (run by :mod:`arena_attacker.main`)."""

from __future__ import annotations

from arena_attacker.app import create_attacker_app
from arena_core.a2a.agent_app import serve_agent
from arena_core.service_ports import ATTACKER_PORT
from arena_core.settings import ArenaSettings

DEFAULT_PORT = ATTACKER_PORT


def serve_attacker(settings: ArenaSettings, *, host: str = "127.0.0.1", port: int = DEFAULT_PORT) -> None:
    """Serve the attacker until interrupted."""
    serve_agent(
        settings,
        lambda public_url: create_attacker_app(settings, public_url=public_url),
        role="attacker",
        host=host,
        port=port,
    )


__all__ = ["DEFAULT_PORT", "serve_attacker"]
