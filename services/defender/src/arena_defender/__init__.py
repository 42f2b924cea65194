"""The arena defender service (an A2A server). Run it with `arena serve defender`."""

from arena_defender.app import create_defender_app
from arena_defender.server import DEFAULT_PORT, serve_defender

__all__ = ["DEFAULT_PORT", "create_defender_app", "serve_defender"]
