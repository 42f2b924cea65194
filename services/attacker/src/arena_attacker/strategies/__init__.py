"""Attack strategies. Each is a :class:`Strategy` with documented ``Params``."""

from arena_attacker.strategies.agentic_strategy import AgenticStrategy
from arena_attacker.strategies.crescendo_strategy import CrescendoStrategy
from arena_attacker.strategies.goat_strategy import GoatStrategy
from arena_attacker.strategies.pair_strategy import PairStrategy
from arena_attacker.strategies.playbook_strategy import PlaybookStrategy
from arena_attacker.strategies.registry import (
    STRATEGIES,
    STRATEGY_NAMES,
    check_strategy,
    create_strategy,
    strategy_class,
    validate_strategy,
)
from arena_attacker.strategies.strategy import (
    ModelFactory,
    Strategy,
    StrategyContext,
    StrategyParams,
    StrategyReport,
)
from arena_attacker.strategies.tap_strategy import TapStrategy

__all__ = [
    "STRATEGIES",
    "STRATEGY_NAMES",
    "AgenticStrategy",
    "CrescendoStrategy",
    "GoatStrategy",
    "ModelFactory",
    "PairStrategy",
    "PlaybookStrategy",
    "Strategy",
    "StrategyContext",
    "StrategyParams",
    "StrategyReport",
    "TapStrategy",
    "check_strategy",
    "create_strategy",
    "strategy_class",
    "validate_strategy",
]
