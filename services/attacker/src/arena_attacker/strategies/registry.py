"""Strategy names, their classes, and how to build one for a match."""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType

from arena_attacker.strategies.agentic_strategy import AgenticStrategy
from arena_attacker.strategies.best_of_n_strategy import BestOfNStrategy
from arena_attacker.strategies.crescendo_strategy import CrescendoStrategy
from arena_attacker.strategies.framing_strategies import (
    LikertStrategy,
    RefusalSuppressionStrategy,
    RoleplayStrategy,
    SkeletonKeyStrategy,
)
from arena_attacker.strategies.goat_strategy import GoatStrategy
from arena_attacker.strategies.indirect_strategy import IndirectStrategy
from arena_attacker.strategies.many_shot_strategy import ManyShotStrategy
from arena_attacker.strategies.pair_strategy import PairStrategy
from arena_attacker.strategies.playbook_strategy import PlaybookStrategy
from arena_attacker.strategies.strategy import Strategy, StrategyContext, StrategyParams
from arena_attacker.strategies.tap_strategy import TapStrategy
from arena_core.errors import InvalidInputError, UnknownStrategyError
from arena_core.match_models import ParamValue
from arena_core.objective import Objective

STRATEGIES: Mapping[str, type[Strategy]] = MappingProxyType(
    {
        strategy.name: strategy
        for strategy in (
            PlaybookStrategy,
            AgenticStrategy,
            CrescendoStrategy,
            PairStrategy,
            TapStrategy,
            GoatStrategy,
            ManyShotStrategy,
            BestOfNStrategy,
            SkeletonKeyStrategy,
            RefusalSuppressionStrategy,
            RoleplayStrategy,
            IndirectStrategy,
            LikertStrategy,
        )
    }
)
STRATEGY_NAMES: tuple[str, ...] = tuple(STRATEGIES)


def strategy_class(name: str) -> type[Strategy]:
    """The class of strategy ``name``; :class:`UnknownStrategyError` lists the valid names."""
    strategy = STRATEGIES.get(name)
    if strategy is None:
        raise UnknownStrategyError(f"unknown strategy '{name}'; choose one of: {', '.join(STRATEGY_NAMES)}")
    return strategy


def check_strategy(name: str) -> None:
    """Raise :class:`UnknownStrategyError` unless ``name`` is a known strategy."""
    strategy_class(name)


def validate_strategy(name: str, params: Mapping[str, ParamValue], objective: Objective) -> StrategyParams:
    """Check the strategy exists, accepts ``params`` and can pursue ``objective``."""
    strategy = strategy_class(name)
    if not strategy.can_pursue(objective):
        raise InvalidInputError(
            f"strategy '{name}' cannot pursue {objective.kind} objective '{objective.label}' "
            f"(it supports: {strategy.supported_objectives()})"
        )
    return strategy.parse_params(params)


def create_strategy(
    name: str, params: Mapping[str, ParamValue], objective: Objective, context: StrategyContext
) -> Strategy:
    """Build strategy ``name`` for one match (validating as :func:`validate_strategy`)."""
    parsed = validate_strategy(name, params, objective)
    return strategy_class(name)(parsed, context)


__all__ = [
    "STRATEGIES",
    "STRATEGY_NAMES",
    "check_strategy",
    "create_strategy",
    "strategy_class",
    "validate_strategy",
]
