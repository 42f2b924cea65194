"""``playbook``: deterministic, offline multi-turn scripts.

Plays the scripts of :mod:`arena_attacker.playbook_scripts` one after another,
each in a new conversation, in library order or shuffled by the match seed.
When every script has been played and turns remain, it starts over from the
first script (a sampling defender may answer differently the second time).
Needs no model: this is the demo's default, since a 135M model cannot drive
tool calls.

Besides phrase objectives it plays every objective of the built-in catalogue
(:mod:`arena_core.objective_catalogue`) that has a script of its own: that
script's turns, in one conversation, started over while turns remain. A
``benign`` objective (an over-refusal probe) is its request, sent once.
"""

from __future__ import annotations

from arena_attacker.match_session import MatchSession
from arena_attacker.playbook_scripts import script_order
from arena_attacker.strategies.strategy import Strategy
from arena_core.objective import Objective
from arena_core.objective_catalogue import CATALOGUE


class PlaybookStrategy(Strategy):
    """Scripted attacks, one new conversation per script."""

    name = "playbook"
    description = "deterministic multi-turn scripts (repeat-after-me, role-play, priming, ...), offline"
    objective_kinds = frozenset({"phrase"})
    needs_model = False

    @classmethod
    def can_pursue(cls, objective: Objective) -> bool:
        return objective.kind in ("phrase", "benign") or bool(_catalogue_script(objective))

    @classmethod
    def supported_objectives(cls) -> str:
        scripted = [entry.id for entry in CATALOGUE.values() if entry.playbook]
        return f"phrase and benign objectives, and the catalogue's {', '.join(scripted)}"

    async def play(self, session: MatchSession) -> None:
        if session.objective.kind == "benign":
            assert session.objective.request is not None  # guaranteed by the objective's validation
            await session.send(
                session.objective.request, reasoning="over-refusal probe: the request as it is"
            )
            return
        scripted = _catalogue_script(session.objective)
        if scripted:
            await self._play_catalogue_script(session, scripted)
            return
        phrase = session.phrase
        assert phrase is not None  # can_pursue: a phrase objective, or a catalogue script
        scripts = script_order(session.request.seed)
        if not scripts:
            return
        while session.turns_left > 0 and not session.won:
            for script in scripts:
                for index, text in enumerate(script.render(phrase)):
                    await session.send(
                        text,
                        new_conversation=index == 0,
                        reasoning=(f"playbook script '{script.name}' step {index + 1}: {script.technique}"),
                    )

    async def _play_catalogue_script(self, session: MatchSession, script: tuple[str, ...]) -> None:
        name = session.objective.id
        while session.turns_left > 0 and not session.won:
            for index, text in enumerate(script):
                await session.send(
                    text,
                    new_conversation=index == 0,
                    reasoning=f"playbook script of objective '{name}' step {index + 1}",
                )


def _catalogue_script(objective: Objective) -> tuple[str, ...]:
    """The catalogue's script for ``objective`` (matched by id and kind), else ()."""
    entry = CATALOGUE.get(objective.id) if objective.id else None
    if entry is None or entry.objective.kind != objective.kind:
        return ()
    return entry.playbook


__all__ = ["PlaybookStrategy"]
