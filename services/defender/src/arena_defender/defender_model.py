"""What the defender needs from a model runtime, and how it picks one.

``ARENA_DEFENDER_RUNTIME`` chooses the runtime: ``native`` (arena-core's
:class:`~arena_core.llm.ChatModel`, the default) or ``any-agent`` (any-agent's
TinyAgent, an optional adapter: :mod:`arena_defender.any_agent_runtime`).
Both answer one chat completion per defender turn; the ``support-desk`` profiles run a
tool loop instead (:func:`tool_runner`): arena-core's :class:`~arena_core.llm.AgentLoop` on
the native runtime, TinyAgent's own loop on any-agent.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol, runtime_checkable

from arena_core.errors import ConfigError
from arena_core.llm import AgentLoop, ChatModel, ChatReply, Message, TokenUsage, Tool
from arena_core.settings import ArenaSettings


class DefenderModel(Protocol):
    """Completes one defender turn.

    ``messages`` are OpenAI-style chat messages (system prompt, kept history,
    the new user message). Failures raise a
    :class:`~arena_core.errors.ModelError` with a sentence a user can act on.
    """

    async def complete(
        self,
        messages: Sequence[Message],
        *,
        temperature: float | None = None,
        max_tokens: int | None = None,
    ) -> ChatReply: ...

    async def aclose(self) -> None:
        """Release the runtime's connections (at shutdown; the model is not used afterwards)."""


@dataclass(frozen=True, slots=True)
class ToolTurn:
    """The outcome of one defender turn with tools: the reply, or '' when the loop ran out of
    steps before the model answered."""

    text: str
    usage: TokenUsage
    model_id: str
    steps: int


@runtime_checkable
class ToolRunner(Protocol):
    """Runs one defender turn with tools: the model calls them until it answers."""

    async def run_tools(
        self,
        messages: Sequence[Message],
        tools: Sequence[Tool],
        *,
        temperature: float | None,
        max_tokens: int | None,
        max_steps: int,
    ) -> ToolTurn: ...


class NativeToolRunner:
    """Arena-core's :class:`~arena_core.llm.AgentLoop` over a :class:`ChatModel` (it traces each call
    as an ``execute_tool`` span)."""

    def __init__(self, model: ChatModel) -> None:
        self._model = model

    async def run_tools(
        self,
        messages: Sequence[Message],
        tools: Sequence[Tool],
        *,
        temperature: float | None,
        max_tokens: int | None,
        max_steps: int,
    ) -> ToolTurn:
        loop = AgentLoop(
            self._model, tools, max_steps=max_steps, temperature=temperature, max_tokens=max_tokens
        )
        run = await loop.run(messages)
        return ToolTurn(text=run.final_text, usage=run.usage, model_id=self._model.model_id, steps=run.steps)


def tool_runner(model: DefenderModel) -> ToolRunner:
    """How ``model`` runs a turn with tools.

    Raises:
        ConfigError: the runtime has no tool loop.
    """
    if isinstance(model, ChatModel):
        return NativeToolRunner(model)
    if isinstance(model, ToolRunner):
        return model
    raise ConfigError(f"the defender's model runtime {type(model).__name__} cannot run tools")


def create_defender_model(settings: ArenaSettings) -> DefenderModel:
    """Build the defender's model runtime once, from settings.

    Raises:
        ConfigError: unknown provider, missing API key, or the ``any-agent``
            runtime without its optional dependencies.
    """
    config = settings.model_for("defender")
    if settings.defender_runtime == "any-agent":
        # Imported here so that the native runtime never loads the adapter.
        from arena_defender.any_agent_runtime import AnyAgentModel

        return AnyAgentModel.from_config(config)
    return ChatModel.from_config(config)


__all__ = [
    "DefenderModel",
    "NativeToolRunner",
    "ToolRunner",
    "ToolTurn",
    "create_defender_model",
    "tool_runner",
]
