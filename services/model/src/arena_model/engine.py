"""The chat engine contract that the HTTP app serves.

An engine turns one validated :class:`~arena_model.openai_models.ChatRequest`
into one :class:`ChatResult`. The app owns everything about the wire format
(ids, timestamps, streaming chunks); engines own only the answer and its
token counts, so a new engine is a single ``complete`` method.
"""

from __future__ import annotations

import abc
from dataclasses import dataclass

from arena_model.openai_models import ChatRequest, FinishReason, ToolCall


@dataclass(frozen=True, slots=True)
class ChatResult:
    """The answer of one completion.

    Contract: either ``content`` is text and ``tool_calls`` is empty, or
    ``tool_calls`` is non-empty, ``content`` is None and ``finish_reason``
    is ``"tool_calls"``. Token counts are never negative.
    """

    content: str | None
    finish_reason: FinishReason
    prompt_tokens: int
    completion_tokens: int
    tool_calls: tuple[ToolCall, ...] = ()

    @property
    def total_tokens(self) -> int:
        """Prompt plus completion tokens, as OpenAI's ``usage.total_tokens``."""
        return self.prompt_tokens + self.completion_tokens


class ChatEngine(abc.ABC):
    """A model that answers chat completions.

    Contract for implementations: ``complete`` may be awaited concurrently
    from one event loop; an engine that cannot run requests in parallel must
    serialise them itself and must never block the loop. ``ready()`` is cheap
    and non-blocking (it is polled by ``/readyz``). ``close()`` is idempotent.
    """

    @property
    @abc.abstractmethod
    def name(self) -> str:
        """Short engine kind, such as ``"llama"`` or ``"scripted"``."""

    @property
    @abc.abstractmethod
    def model_id(self) -> str:
        """The model id reported to clients in responses and ``/v1/models``."""

    @abc.abstractmethod
    async def complete(self, request: ChatRequest) -> ChatResult:
        """Answer ``request``.

        Raises:
            InvalidInputError: the request cannot be served by this engine.
            ModelError: the model failed while generating.
        """

    @abc.abstractmethod
    def ready(self) -> bool:
        """True when ``complete`` can answer without loading anything first."""

    def unready_reason(self) -> str:
        """A sentence explaining why ``ready()`` is False (shown by ``/readyz``)."""
        return f"the {self.name} engine is not ready"

    def close(self) -> None:  # noqa: B027 - an optional hook, not an abstract method
        """Release the engine's resources; the default has none to release."""


__all__ = ["ChatEngine", "ChatResult"]
