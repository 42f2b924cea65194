"""``playbook``: deterministic, offline multi-turn scripts.

Plays the scripts of :mod:`arena_attacker.playbook_scripts` one after another,
each in a new conversation, in library order or shuffled by the match seed.
When every script has been played and turns remain, it starts over from the
first script (a sampling defender may answer differently the second time).
Needs no model: this is the demo's default, since a 135M model cannot drive
tool calls.
"""

from __future__ import annotations

from arena_attacker.match_session import MatchSession
from arena_attacker.playbook_scripts import script_order
from arena_attacker.strategies.strategy import Strategy


class PlaybookStrategy(Strategy):
    """Scripted attacks, one new conversation per script."""

    name = "playbook"
    description = "deterministic multi-turn scripts (repeat-after-me, role-play, priming, ...), offline"
    objective_kinds = frozenset({"phrase"})
    needs_model = False

    async def play(self, session: MatchSession) -> None:
        phrase = session.phrase
        assert phrase is not None  # playbook accepts phrase objectives only
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


__all__ = ["PlaybookStrategy"]
