"""Attack strategies: ``agentic`` (an attacker LLM) and ``playbook`` (scripted)."""

from arena_attacker.strategies.agentic_strategy import AgenticStrategy
from arena_attacker.strategies.playbook_strategy import PlaybookStrategy
from arena_attacker.strategies.registry import (
    STRATEGY_NAMES,
    ModelFactory,
    check_strategy,
    create_strategy,
)
from arena_attacker.strategies.strategy import Strategy, StrategyReport

__all__ = [
    "STRATEGY_NAMES",
    "AgenticStrategy",
    "ModelFactory",
    "PlaybookStrategy",
    "Strategy",
    "StrategyReport",
    "check_strategy",
    "create_strategy",
]
