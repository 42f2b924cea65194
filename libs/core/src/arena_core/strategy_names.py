"""The names of the attacker's built-in strategies.

The strategies live in the attacker service; the orchestrator validates
campaign specs without importing it (services never import each other), so the
names are kept here. A test checks they match the attacker's registry.
"""

from __future__ import annotations

BUILTIN_STRATEGY_NAMES: tuple[str, ...] = (
    "playbook",
    "agentic",
    "crescendo",
    "pair",
    "tap",
    "goat",
    "many-shot",
    "best-of-n",
    "skeleton-key",
    "refusal-suppression",
    "roleplay",
    "indirect",
    "likert",
)

__all__ = ["BUILTIN_STRATEGY_NAMES"]
