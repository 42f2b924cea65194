"""``many-shot``: a long fabricated dialogue in which an assistant always complied.

Anil et al. 2024 ("Many-shot jailbreaking", Anthropic) found that filling a long context with
hundreds of faux dialogue turns, in which an assistant answers what it should refuse, makes the
real request at the end far more likely to be answered, with the effect growing as a power law
of the number of shots (up to 256 in their runs). The shots here are our own
(:mod:`._many_shot_dialogue`), about rules and secrets rather than harm.

One message per attempt: the shots, then the objective's request, as ``User:``/``Assistant:``
lines ending on an open ``Assistant:``. The message is fitted to ``max_prompt_tokens`` (the part
of the defender model's context it may take: the embedded model has 2,048 tokens in all),
counted conservatively at one token per three characters; shots that do not fit are left out and
the transcript says how many went. Later attempts double the shots (within the budget) and draw
them in another order.
"""

from __future__ import annotations

import math
import random
from collections.abc import Sequence
from typing import ClassVar

from pydantic import Field

from arena_attacker.strategies._attempts import Attempts, Move
from arena_attacker.strategies._many_shot_dialogue import SHOTS
from arena_attacker.strategies.strategy import StrategyParams

CHARS_PER_TOKEN = 3
"""A conservative estimate (English averages about four): a message never runs over its budget."""


class ManyShotParams(StrategyParams):
    shots: int = Field(default=16, ge=1, le=256)
    """Faux exchanges in the first attempt (doubled each further attempt, within the budget)."""
    max_prompt_tokens: int = Field(default=1200, ge=100, le=1_000_000)
    """The most of the defender model's context the message may take, in tokens."""


def estimate_tokens(text: str) -> int:
    """A conservative token count of ``text`` (see :data:`CHARS_PER_TOKEN`)."""
    return math.ceil(len(text) / CHARS_PER_TOKEN)


def dialogue(ask: str, shots: Sequence[tuple[str, str]]) -> str:
    """The message: every shot as a ``User:``/``Assistant:`` exchange, then the request."""
    lines = [f"User: {question}\nAssistant: {answer}" for question, answer in shots]
    lines.append(f"User: {ask}\nAssistant:")
    return "\n\n".join(lines)


def fitted(ask: str, pool: Sequence[tuple[str, str]], wanted: int, budget: int) -> tuple[str, int]:
    """The longest message of at most ``wanted`` shots of ``pool`` (cycled) within ``budget``
    tokens, and how many shots it holds (0: only the request fits, or not even that)."""
    count = wanted
    while count > 0:
        message = dialogue(ask, [pool[i % len(pool)] for i in range(count)])
        if estimate_tokens(message) <= budget:
            return message, count
        # Shrink in proportion, at least by one: few rounds even for 256 shots.
        count = min(count - 1, int(count * budget / max(1, estimate_tokens(message))))
    return dialogue(ask, []), 0


class ManyShotStrategy(Attempts):
    """A faux dialogue of compliance, then the request (see the module doc)."""

    name: ClassVar[str] = "many-shot"
    description: ClassVar[str] = (
        "a long fabricated dialogue of an assistant complying, then the request (offline)"
    )
    Params: ClassVar[type[StrategyParams]] = ManyShotParams

    def attempt(self, ask: str, number: int, seed: int | None) -> Sequence[Move]:
        assert isinstance(self.params, ManyShotParams)
        pool = list(SHOTS)
        random.Random(f"many-shot:{seed}:{number}").shuffle(pool)  # noqa: S311 - reproducible order
        wanted = min(256, self.params.shots * 2**number)
        message, count = fitted(ask, pool, wanted, self.params.max_prompt_tokens)
        if number > 0 and count == 0:
            return ()  # nothing fits beside the request: a second bare request would add nothing
        note = (
            f"{count} faux exchanges of {wanted} wanted "
            f"(~{estimate_tokens(message)} of {self.params.max_prompt_tokens} tokens), then the request"
        )
        return (Move(message, note),)


__all__ = ["ManyShotParams", "ManyShotStrategy", "dialogue", "estimate_tokens", "fitted"]
