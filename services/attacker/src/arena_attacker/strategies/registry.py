"""Strategy names and how to build each one."""

from __future__ import annotations

from collections.abc import Callable

from arena_attacker.strategies.agentic_strategy import AgenticStrategy
from arena_attacker.strategies.playbook_strategy import PlaybookStrategy
from arena_attacker.strategies.strategy import Strategy
from arena_core.errors import UnknownStrategyError
from arena_core.llm import ChatModel

ModelFactory = Callable[[], ChatModel]

STRATEGY_NAMES: tuple[str, ...] = (AgenticStrategy.name, PlaybookStrategy.name)


def check_strategy(name: str) -> None:
    """Raise :class:`UnknownStrategyError` unless ``name`` is a known strategy."""
    if name not in STRATEGY_NAMES:
        raise UnknownStrategyError(f"unknown strategy '{name}'; choose one of: {', '.join(STRATEGY_NAMES)}")


def create_strategy(
    name: str,
    *,
    model_factory: ModelFactory,
    temperature: float | None = None,
    max_tokens: int | None = None,
) -> Strategy:
    """Build strategy ``name``; only model-driven strategies call ``model_factory``."""
    check_strategy(name)
    if name == AgenticStrategy.name:
        return AgenticStrategy(model_factory(), temperature=temperature, max_tokens=max_tokens)
    return PlaybookStrategy()


__all__ = ["STRATEGY_NAMES", "ModelFactory", "check_strategy", "create_strategy"]
