"""Entry point of ``arena serve orchestrator``."""

from __future__ import annotations

from arena_core.http_server import run_app
from arena_core.settings import ArenaSettings
from arena_orchestrator.app import create_orchestrator_app

DEFAULT_PORT = 8080


def serve_orchestrator(settings: ArenaSettings, *, host: str = "127.0.0.1", port: int = DEFAULT_PORT) -> None:
    """Serve the API and dashboard, and run a campaign worker, until interrupted."""
    run_app(create_orchestrator_app(settings), host=host, port=port, log_level=settings.log_level)


__all__ = ["DEFAULT_PORT", "serve_orchestrator"]
