"""The arena defender service (an A2A server). Run it with `arena serve defender`.

A defender is a helpful assistant with one rule, never to say the forbidden
phrase. How hard it defends is its profile (``ARENA_DEFENDER_PROFILE``):
``naive``, ``hardened`` (the default) or ``guarded`` (hardened plus the
non-LLM :class:`OutputGuard`); see :mod:`arena_defender.defender_profile`.
"""

from arena_defender.app import create_defender_app
from arena_defender.defender_profile import PROFILE_NAMES, DefenderProfile
from arena_defender.output_guard import GuardDecision, OutputGuard
from arena_defender.server import DEFAULT_PORT, serve_defender

__all__ = [
    "DEFAULT_PORT",
    "PROFILE_NAMES",
    "DefenderProfile",
    "GuardDecision",
    "OutputGuard",
    "create_defender_app",
    "serve_defender",
]
