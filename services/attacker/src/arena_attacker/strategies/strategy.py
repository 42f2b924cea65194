"""The strategy interface: how an attacker chooses what to say."""

from __future__ import annotations

import abc
from dataclasses import dataclass, field
from typing import ClassVar

from arena_attacker.match_session import MatchSession
from arena_core.llm import TokenUsage


@dataclass(slots=True)
class StrategyReport:
    """What a strategy spent: attacker-side model usage and model id."""

    attacker_model: str | None = None
    attacker_usage: TokenUsage = field(default_factory=TokenUsage)


class Strategy(abc.ABC):
    """Plays a match through a :class:`MatchSession`.

    ``play`` returns when the strategy has nothing more to try; the session
    raises :class:`~arena_attacker.match_session.MatchOver` when the match ends
    earlier (won, or out of turns), which the strategy may let propagate.
    Target and model failures propagate as ArenaErrors.
    """

    name: ClassVar[str]
    description: ClassVar[str]

    def __init__(self) -> None:
        self.report = StrategyReport()

    @abc.abstractmethod
    async def play(self, session: MatchSession) -> None:
        """Attack until the session ends the match or there is nothing left to try."""


__all__ = ["Strategy", "StrategyReport"]
