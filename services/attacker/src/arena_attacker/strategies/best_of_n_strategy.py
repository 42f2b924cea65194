"""``best-of-n``: the same request, randomly augmented, sampled until one gets through.

Hughes et al. 2024 ("Best-of-N Jailbreaking", arXiv:2412.03556) sample variations of a request
(scrambled word middles, random capitals, characters one code point off, at strength sigma
0.4) and send each, each on its own, until one is answered; the success rate grows with N as a
power law (89% on GPT-4o with N = 10,000 in their runs). Here each sample is the objective's
request through the ``noise`` converter (:class:`~arena_core.converters.obfuscation.NoiseConverter`),
drawn from the match seed and the sample's number, in a new conversation; the match stops at
the first success (or after ``n`` samples, or out of turns). A quoted phrase in the request (the
words a phrase objective asks for) is left as it is: a sample asking for other words could not
win.
"""

from __future__ import annotations

import random
import re
from collections.abc import Sequence
from typing import ClassVar

from pydantic import Field

from arena_attacker.strategies._attempts import Attempts, Move
from arena_attacker.strategies.strategy import StrategyParams
from arena_core.converters.obfuscation import NoiseConverter, NoiseParams

_QUOTED = re.compile(r'("[^"\n]{1,200}")')


class BestOfNParams(StrategyParams):
    n: int = Field(default=20, ge=1, le=10_000)
    """Samples at most (the turn budget bounds them too)."""
    sigma: float = Field(default=0.4, ge=0.0, le=1.0)
    """Augmentation strength (the paper's 0.4)."""


class BestOfNStrategy(Attempts):
    """Augmented samples of the request, one per conversation (see the module doc)."""

    name: ClassVar[str] = "best-of-n"
    description: ClassVar[str] = "randomly augmented samples of the request until one gets through (offline)"
    Params: ClassVar[type[StrategyParams]] = BestOfNParams

    def attempt(self, ask: str, number: int, seed: int | None) -> Sequence[Move]:
        assert isinstance(self.params, BestOfNParams)
        if number >= self.params.n:
            return ()
        noise = NoiseConverter(NoiseParams(sigma=self.params.sigma))
        rng = random.Random(f"best-of-n:{seed}:{number}")  # noqa: S311 - reproducible, not security
        # A quoted phrase is what the defender must say: augment the request around it, not it.
        sample = "".join(
            piece if _QUOTED.fullmatch(piece) else noise.convert(piece, rng) for piece in _QUOTED.split(ask)
        )
        return (Move(sample, f"sample {number + 1} of {self.params.n} (sigma {self.params.sigma:g})"),)


__all__ = ["BestOfNParams", "BestOfNStrategy"]
