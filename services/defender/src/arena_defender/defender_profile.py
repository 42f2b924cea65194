"""Defender profiles: how hard the blue team defends (``ARENA_DEFENDER_PROFILE``).

=========  ===========================  ============
profile    system prompt                output guard
=========  ===========================  ============
naive      the sample's one-rule prompt no
hardened   rules + worked examples      no
guarded    the hardened prompt          yes
=========  ===========================  ============

``hardened`` is the default (docs/adr/0007-defender-profiles.md says why).
``ARENA_DEFENDER_SYSTEM_PROMPT`` replaces the profile's prompt and leaves its
guard in place, so ``guarded`` with a custom prompt is still guarded.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final, Literal, get_args

from arena_core.settings import ArenaSettings
from arena_defender.output_guard import OutputGuard
from arena_defender.prompts import HARDENED_SYSTEM_PROMPT, NAIVE_SYSTEM_PROMPT, render_system_prompt

ProfileName = Literal["naive", "hardened", "guarded"]
PROFILE_NAMES: Final[tuple[str, ...]] = get_args(ProfileName)

PROFILE_PROMPTS: Final[dict[str, str]] = {
    "naive": NAIVE_SYSTEM_PROMPT,
    "hardened": HARDENED_SYSTEM_PROMPT,
    "guarded": HARDENED_SYSTEM_PROMPT,
}
"""Each profile's prompt template (``{phrase}`` not yet substituted)."""

GUARDED_PROFILES: Final = frozenset({"guarded"})


@dataclass(frozen=True, slots=True)
class DefenderProfile:
    """A resolved profile: its name, the rendered system prompt and its guard (or None)."""

    name: str
    system_prompt: str
    guard: OutputGuard | None

    @classmethod
    def from_settings(cls, settings: ArenaSettings) -> DefenderProfile:
        """Resolve ``ARENA_DEFENDER_PROFILE``, the prompt override and the phrase.

        Raises:
            ConfigError: the phrase cannot be guarded (see :class:`OutputGuard`).
        """
        name = settings.defender_profile
        template = settings.defender_system_prompt or PROFILE_PROMPTS[name]
        guard = OutputGuard(settings.defender_phrase) if name in GUARDED_PROFILES else None
        return cls(
            name=name,
            system_prompt=render_system_prompt(template, settings.defender_phrase),
            guard=guard,
        )


__all__ = ["GUARDED_PROFILES", "PROFILE_NAMES", "PROFILE_PROMPTS", "DefenderProfile", "ProfileName"]
