"""Attack strategies. Each is a :class:`Strategy` with documented ``Params``."""

from arena_attacker.strategies.agentic_strategy import AgenticStrategy
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

__all__ = [
    "STRATEGIES",
    "STRATEGY_NAMES",
    "AgenticStrategy",
    "ModelFactory",
    "PlaybookStrategy",
    "Strategy",
    "StrategyContext",
    "StrategyParams",
    "StrategyReport",
    "check_strategy",
    "create_strategy",
    "strategy_class",
    "validate_strategy",
]
