"""The orchestrator's server: ``serve_orchestrator`` (run by :mod:`arena_orchestrator.main`)."""

from __future__ import annotations

from arena_core.http_auth import warn_if_open
from arena_core.http_server import run_app
from arena_core.service_ports import ORCHESTRATOR_PORT
from arena_core.settings import ArenaSettings
from arena_orchestrator.app import create_orchestrator_app
from arena_orchestrator.worker import CampaignWorker

DEFAULT_PORT = ORCHESTRATOR_PORT


def serve_orchestrator(settings: ArenaSettings, *, host: str = "127.0.0.1", port: int = DEFAULT_PORT) -> None:
    """Serve the API and dashboard, and run a campaign worker, until interrupted.

    On SIGTERM the API keeps answering (``/readyz`` 503) while the worker shuts down
    gracefully (running matches finish or are handed back), then the server stops.
    """
    warn_if_open(settings.accepted_tokens(), host, "orchestrator")
    app = create_orchestrator_app(settings)
    worker: CampaignWorker = app.state.worker
    run_app(
        app,
        host=host,
        port=port,
        log_level=settings.log_level,
        shutdown_grace_s=settings.shutdown_grace_s,
        on_terminate=worker.shutdown,
    )


__all__ = ["DEFAULT_PORT", "serve_orchestrator"]
