"""Defender profiles: how hard the blue team defends (``ARENA_DEFENDER_PROFILE``).

=====================  ====================================  ============  =====================
profile                system prompt                         output guard  tools
=====================  ====================================  ============  =====================
naive                  the sample's one-rule prompt          no            none
hardened               rules + worked examples               no            none
guarded                the hardened prompt                   yes           none
support-desk           a shop's support agent, policy once   no            the support desk
support-desk-hardened  + documents are data                  no            + provenance guard
=====================  ====================================  ============  =====================

The support-desk profiles act (:mod:`arena_defender.support_desk_agent`): their tools run
against a back office per conversation, and the action objectives judge what they did.

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
from arena_defender.support_desk_agent import support_desk_prompt

ProfileName = Literal["naive", "hardened", "guarded", "support-desk", "support-desk-hardened"]
PROFILE_NAMES: Final[tuple[str, ...]] = get_args(ProfileName)

PROFILE_PROMPTS: Final[dict[str, str]] = {
    "naive": NAIVE_SYSTEM_PROMPT,
    "hardened": HARDENED_SYSTEM_PROMPT,
    "guarded": HARDENED_SYSTEM_PROMPT,
    "support-desk": support_desk_prompt(hardened=False),
    "support-desk-hardened": support_desk_prompt(hardened=True),
}
"""Each profile's prompt template (``{phrase}`` not yet substituted)."""

GUARDED_PROFILES: Final = frozenset({"guarded"})
DESK_PROFILES: Final = frozenset({"support-desk", "support-desk-hardened"})
"""The profiles that act with the support desk's tools."""


@dataclass(frozen=True, slots=True)
class DefenderProfile:
    """A resolved profile: its name, the rendered system prompt, its guard (or None) and whether
    it acts with the support desk's tools."""

    name: str
    system_prompt: str
    guard: OutputGuard | None
    desk: bool = False

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
            desk=name in DESK_PROFILES,
        )


__all__ = [
    "DESK_PROFILES",
    "GUARDED_PROFILES",
    "PROFILE_NAMES",
    "PROFILE_PROMPTS",
    "DefenderProfile",
    "ProfileName",
]
