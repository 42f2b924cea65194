"""A2A Arena orchestrator: campaigns, the match queue, workers, reports and the dashboard."""

from arena_orchestrator.app import create_orchestrator_app
from arena_orchestrator.server import DEFAULT_PORT, serve_orchestrator

__all__ = ["DEFAULT_PORT", "create_orchestrator_app", "serve_orchestrator"]
