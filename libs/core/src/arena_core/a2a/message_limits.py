"""Limits on one incoming A2A message, refused with the A2A spec's invalid-params error.

:class:`arena_core.a2a.request_handler.ArenaRequestHandler` checks the message of
every ``SendMessage`` / ``SendStreamingMessage`` (and the 0.3 ``message/send`` /
``message/stream``, which the SDK converts and hands to the same methods) with
:func:`check_message` before the SDK creates or continues a task: more parts than
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

from a2a.types.a2a_pb2 import Message
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


def empty_part_in(message: Message) -> int | None:
    """The index of the first part with no content (none of text, raw, url, data), else None."""
    for index, part in enumerate(message.parts):
        if part.WhichOneof("content") is None:
            return index
    return None


def check_message(message: Message, limits: RequestLimits) -> None:
    """Raise ``InvalidParamsError`` naming the problem when ``message`` is over a limit or has an empty part.

    A part must hold one of ``text``, ``raw``, ``url`` or ``data`` (A2A 1.0's Part);
    a2a-sdk 1.3.0 accepts a part with none, and the task then fails.
    """
    problem = message_problem(message, limits)
    if problem is not None:
        raise InvalidParamsError(message=f"Message too large: {problem}")
    empty = empty_part_in(message)
    if empty is not None:
        raise InvalidParamsError(
            message=f"Invalid params: message.parts[{empty}] has no content (one of text, raw, url or data)"
        )


__all__ = ["check_message", "empty_part_in", "message_problem"]
