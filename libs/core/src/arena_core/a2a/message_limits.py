"""Limits on one incoming A2A message, refused with the A2A spec's invalid-params error.

:class:`LimitedRequestHandler` is a2a-sdk's ``DefaultRequestHandler`` that
checks the message of every ``SendMessage`` / ``SendStreamingMessage`` (and the
0.3 ``message/send`` / ``message/stream``, which the SDK converts and hands to
the same methods) before the SDK creates or continues a task: more parts than
``ARENA_MAX_MESSAGE_PARTS``, or text parts of more than
``ARENA_MAX_MESSAGE_TEXT_BYTES`` UTF-8 bytes in total, raise
``InvalidParamsError`` with a reason naming the limit. The SDK answers that as
JSON-RPC -32602 Invalid params, or HTTP+JSON 400 ``INVALID_ARGUMENT``; on a
stream it is raised before the first event, so it is the same error response.

Checking here rather than in the executors keeps the spec's error: an error
raised from ``AgentExecutor.execute`` would end the SDK's producer for the task
(failing a parked conversation) and be logged as a crash. No task is created or
touched for a refused message.
"""

from __future__ import annotations

from collections.abc import AsyncGenerator
from typing import Any

from a2a.server.context import ServerCallContext
from a2a.server.events import Event
from a2a.server.request_handlers import DefaultRequestHandler
from a2a.types.a2a_pb2 import Message, SendMessageRequest, Task
from a2a.utils.errors import InvalidParamsError

from arena_core.http_limits import RequestLimits


def message_problem(message: Message, limits: RequestLimits) -> str | None:
    """Why ``message`` is over a limit, or None when it is within them."""
    parts = len(message.parts)
    if parts > limits.max_message_parts:
        limit = limits.max_message_parts
        return f"the message has {parts} parts; the limit is {limit} (ARENA_MAX_MESSAGE_PARTS)"
    text_bytes = sum(
        len(part.text.encode("utf-8", "surrogatepass"))
        for part in message.parts
        if part.WhichOneof("content") == "text"
    )
    if text_bytes > limits.max_message_text_bytes:
        return (
            f"the message's text parts are {text_bytes} bytes of UTF-8; the limit is "
            f"{limits.max_message_text_bytes} (ARENA_MAX_MESSAGE_TEXT_BYTES)"
        )
    return None


def check_message(message: Message, limits: RequestLimits) -> None:
    """Raise ``InvalidParamsError`` naming the limit when ``message`` is over one."""
    problem = message_problem(message, limits)
    if problem is not None:
        raise InvalidParamsError(message=f"Message too large: {problem}")


class LimitedRequestHandler(DefaultRequestHandler):
    """``DefaultRequestHandler`` that refuses messages over ``limits`` before any task exists."""

    def __init__(self, *args: Any, limits: RequestLimits, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self._limits = limits

    async def on_message_send(self, params: SendMessageRequest, context: ServerCallContext) -> Message | Task:
        check_message(params.message, self._limits)
        return await super().on_message_send(params, context)  # type: ignore[no-any-return]

    async def on_message_send_stream(
        self, params: SendMessageRequest, context: ServerCallContext
    ) -> AsyncGenerator[Event]:
        check_message(params.message, self._limits)
        inner = super().on_message_send_stream(params, context)
        try:
            async for event in inner:
                yield event
        finally:
            await inner.aclose()  # as the SDK's own wrapper does: close the inner stream on disconnect


__all__ = ["LimitedRequestHandler", "check_message", "message_problem"]
