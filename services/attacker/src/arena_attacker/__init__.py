"""The arena attacker service (an A2A server). Run it with `arena serve attacker`."""

from arena_attacker.app import create_attacker_app
from arena_attacker.server import DEFAULT_PORT, serve_attacker

__all__ = ["DEFAULT_PORT", "create_attacker_app", "serve_attacker"]
