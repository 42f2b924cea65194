"""The strategy interface: how an attacker chooses what to say.

Each strategy declares its parameters as a pydantic model (``Params``) with
documented defaults; a match request's ``params`` are validated against it, and
unknown keys are rejected. Strategies record their own reasoning per turn
(``reasoning=``), which goes to the transcript and never to the defender.
"""

from __future__ import annotations

import abc
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import ClassVar

from pydantic import BaseModel, ConfigDict, ValidationError

from arena_attacker.match_session import MatchSession
from arena_core.errors import InvalidInputError
from arena_core.llm import ChatModel, TokenUsage
from arena_core.match_models import ParamValue
from arena_core.objective import OBJECTIVE_KINDS, Objective


class StrategyParams(BaseModel):
    """Base of every strategy's parameter model: frozen, unknown keys rejected."""

    model_config = ConfigDict(extra="forbid", frozen=True)


ModelFactory = Callable[[], ChatModel]


@dataclass(frozen=True, slots=True)
class StrategyContext:
    """What a strategy may use besides the session: the attacker model and its settings."""

    model_factory: ModelFactory
    temperature: float | None = None
    max_tokens: int | None = None


@dataclass(slots=True)
class StrategyReport:
    """What a strategy spent and used: attacker model, usage, prompts (by hash)."""

    attacker_model: str | None = None
    attacker_temperature: float | None = None
    attacker_usage: TokenUsage = field(default_factory=TokenUsage)
    prompt_hashes: dict[str, str] = field(default_factory=dict)


class Strategy(abc.ABC):
    """Plays a match through a :class:`MatchSession`.

    ``play`` returns when the strategy has nothing more to try; the session
    raises :class:`~arena_attacker.match_session.MatchOver` when the match ends
    earlier (won, or out of turns), which the strategy may let propagate.
    Target and model failures propagate as ArenaErrors.
    """

    name: ClassVar[str]
    description: ClassVar[str]
    Params: ClassVar[type[StrategyParams]] = StrategyParams
    objective_kinds: ClassVar[frozenset[str]] = frozenset(OBJECTIVE_KINDS) - {"benign"}
    """Benign objectives (over-refusal probes) are sent as they are, by ``playbook`` only."""
    needs_model: ClassVar[bool] = True

    @classmethod
    def can_pursue(cls, objective: Objective) -> bool:
        """True when this strategy can play for ``objective``."""
        return objective.kind in cls.objective_kinds

    @classmethod
    def supported_objectives(cls) -> str:
        """What :meth:`can_pursue` accepts, in words for error messages."""
        return ", ".join(kind for kind in OBJECTIVE_KINDS if kind in cls.objective_kinds) + " objectives"

    def __init__(self, params: StrategyParams, context: StrategyContext) -> None:
        self.params = params
        self.context = context
        self.report = StrategyReport()

    @classmethod
    def parse_params(cls, raw: Mapping[str, ParamValue]) -> StrategyParams:
        """Validate a request's ``params`` for this strategy.

        Raises :class:`InvalidInputError` naming every bad or unknown parameter.
        """
        try:
            return cls.Params.model_validate(dict(raw))
        except ValidationError as exc:
            problems = "; ".join(
                f"{'.'.join(str(p) for p in err['loc']) or 'params'}: {err['msg']}" for err in exc.errors()
            )
            raise InvalidInputError(f"invalid params for strategy '{cls.name}': {problems}") from exc

    @abc.abstractmethod
    async def play(self, session: MatchSession) -> None:
        """Attack until the session ends the match or there is nothing left to try."""


__all__ = ["ModelFactory", "Strategy", "StrategyContext", "StrategyParams", "StrategyReport"]
