"""A chain of converters applied, in order, to every message a strategy sends.

Each message gets its own random generator, seeded by the match's converter seed, the
message's text (its hash), how many times that same text was converted before in the match,
and the step's index in the chain: the same seed gives the same messages, also when a strategy
sends from several conversations at once (PAIR streams, TAP branches) and they interleave in
another order; two messages of one match differ, and so does one text sent twice. A
model-driven step asks ``rewrite`` (the attacker model) and records that model; ``split``
(last) makes the message several turns.
"""

from __future__ import annotations

import hashlib
import random
from collections import Counter
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass

from arena_core.converters.converter import (
    Converter,
    ConverterSpec,
    ModelConverter,
    SplittingConverter,
    TextConverter,
)
from arena_core.converters.registry import build_converters
from arena_core.errors import InvalidInputError, ModelUnavailableError

Rewrite = Callable[[str, str], Awaitable[str]]
"""``await rewrite(system, prompt)``: the attacker model's reply."""

MAX_CONVERTED_CHARS = 200_000
"""A converted message longer than this is refused (hex of a long text, spacing of spacing ...)."""


def converter_seed_of(match_id: str) -> int:
    """The converter seed of a match without a seed: 48 bits of the hash of its id."""
    return int.from_bytes(hashlib.sha256(match_id.encode()).digest()[:6], "big")


@dataclass(frozen=True, slots=True)
class ConvertedMessage:
    """What one strategy message became: the turns to send, in order."""

    original: str
    turns: tuple[str, ...]

    @property
    def changed(self) -> bool:
        return self.turns != (self.original,)


class ConverterChain:
    """The converters of one match, in order (see the module)."""

    def __init__(
        self,
        specs: Sequence[ConverterSpec],
        *,
        seed: int,
        rewrite: Rewrite | None = None,
        rewrite_model: str | None = None,
    ) -> None:
        """Raises :class:`InvalidInputError` for an invalid chain, or a model-driven step
        without ``rewrite`` (no attacker model)."""
        self.specs = tuple(specs)
        self.seed = seed
        self._converters: list[Converter] = build_converters(self.specs)
        for converter in self._converters:
            if isinstance(converter, ModelConverter) and rewrite is None:
                raise InvalidInputError(
                    f"converter '{converter.name}' rewrites with the attacker's model, "
                    "and this attacker has none"
                )
        self._rewrite = rewrite
        self.rewrite_model = (
            rewrite_model if any(isinstance(c, ModelConverter) for c in self._converters) else None
        )
        self._seen: Counter[str] = Counter()

    def __bool__(self) -> bool:
        return bool(self._converters)

    @property
    def max_turns_per_message(self) -> int:
        """The most turns one message becomes (a split's parts; else 1)."""
        last = self._converters[-1] if self._converters else None
        if isinstance(last, SplittingConverter):
            parts = getattr(last.params, "parts", 1)
            return parts if isinstance(parts, int) else 1
        return 1

    @property
    def uses_model(self) -> bool:
        """True when a step rewrites with the attacker's model."""
        return any(isinstance(converter, ModelConverter) for converter in self._converters)

    @property
    def labels(self) -> tuple[str, ...]:
        """Each step as ``name`` or ``name:k=v,...``, in order."""
        return tuple(spec.label for spec in self.specs)

    async def apply(self, text: str) -> ConvertedMessage:
        """Convert the next message of the match."""
        digest = hashlib.sha256(text.encode()).hexdigest()
        occurrence = self._seen[digest]
        self._seen[digest] += 1
        turns = [text]
        for step, converter in enumerate(self._converters):
            # Reproducible, not security: the same seed and text give the same draws.
            rng = random.Random(f"{self.seed}:{digest}:{occurrence}:{step}")  # noqa: S311
            if isinstance(converter, TextConverter):
                turns = [converter.convert(turn, rng) for turn in turns]
            elif isinstance(converter, ModelConverter):
                turns = [await self._rewritten(converter, turn) for turn in turns]
            elif isinstance(converter, SplittingConverter):
                turns = [part for turn in turns for part in converter.split(turn, rng)]
            if sum(map(len, turns)) > MAX_CONVERTED_CHARS:
                raise InvalidInputError(
                    f"converter '{converter.name}' made a message of over {MAX_CONVERTED_CHARS} characters"
                )
        return ConvertedMessage(original=text, turns=tuple(turns))

    async def _rewritten(self, converter: ModelConverter, text: str) -> str:
        assert self._rewrite is not None
        system, template = converter.instructions()
        reply = (await self._rewrite(system, template.replace("{text}", text))).strip()
        if not reply:
            raise ModelUnavailableError(
                f"converter '{converter.name}': the attacker model ({self.rewrite_model}) returned nothing"
            )
        return reply


__all__ = ["MAX_CONVERTED_CHARS", "ConvertedMessage", "ConverterChain", "Rewrite", "converter_seed_of"]
