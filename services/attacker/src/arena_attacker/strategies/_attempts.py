"""The base of the template families: attempts of one or more turns, each in a new conversation.

A family renders an attempt (its messages) from the objective's request (:func:`~.asks.ask_of`)
and the attempt's number; the base sends them, one conversation per attempt, until the match
is won or out of turns, or the family has nothing more to try. A family with fewer variants
than turns plays them again, as ``playbook`` does: a sampling defender may answer differently.
No model is involved: given the same objective, parameters and seed (the match's, else one
derived from its id), a family says the same things.
"""

from __future__ import annotations

import abc
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import ClassVar

from arena_attacker.match_session import MatchSession
from arena_attacker.strategies.asks import ask_of
from arena_attacker.strategies.strategy import Strategy
from arena_core.a2a.client.attachments import Attachment
from arena_core.objective import OBJECTIVE_KINDS


@dataclass(frozen=True, slots=True)
class Move:
    """One message of an attempt, with the note the transcript shows for it."""

    text: str
    note: str
    attachments: tuple[Attachment, ...] = field(default=())


class Attempts(Strategy, abc.ABC):
    """Plays :meth:`attempt` 0, 1, 2 ... each in a new conversation (see the module doc)."""

    objective_kinds: ClassVar[frozenset[str]] = frozenset(OBJECTIVE_KINDS) - {"benign"}
    needs_model: ClassVar[bool] = False

    @abc.abstractmethod
    def attempt(self, ask: str, number: int, seed: int | None) -> Sequence[Move]:
        """The messages of attempt ``number`` (empty: nothing more to try)."""

    async def play(self, session: MatchSession) -> None:
        ask = ask_of(session.objective)
        number = 0
        while session.turns_left > 0 and not session.won:
            moves = self.attempt(ask, number, session.seed)
            if not moves:
                return
            for index, move in enumerate(moves):
                await session.send(
                    move.text,
                    new_conversation=index == 0,
                    reasoning=f"{self.name} attempt {number + 1}, step {index + 1}: {move.note}",
                    attachments=move.attachments,
                )
            number += 1


__all__ = ["Attempts", "Move"]
