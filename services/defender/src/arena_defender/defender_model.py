"""What the defender needs from a model runtime, and how it picks one.

``ARENA_DEFENDER_RUNTIME`` chooses the runtime: ``native`` (arena-core's
:class:`~arena_core.llm.ChatModel`, the default) or ``any-agent`` (any-agent's
TinyAgent, an optional adapter: :mod:`arena_defender.any_agent_runtime`).
Both answer one chat completion per defender turn.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol

from arena_core.llm import ChatModel, ChatReply, Message
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


__all__ = ["DefenderModel", "create_defender_model"]
