"""The arena agents' A2A request handler: a2a-sdk's ``DefaultRequestHandler`` plus four rules.

:class:`ArenaRequestHandler` sees every ``SendMessage`` / ``SendStreamingMessage``
(and the 0.3 ``message/send`` / ``message/stream``, which the SDK converts and
hands to the same methods, on both bindings) before the SDK creates or
continues a task, and:

1. refuses a message over the size limits with the spec's invalid-params error
   (:func:`arena_core.a2a.message_limits.check_message`);
2. fills in the ``contextId`` of a message that names only a ``taskId``, from
   the stored task. The A2A 1.0 specification says an agent MUST infer the
   context from the task in that case; a2a-sdk 1.3.0 does not
   (a2aproject/a2a-python#1206): it gives the request a fresh contextId, so
   the turn is answered from an empty history and the task breaks on the
   next turn. The task is read from the task store, so on Redis any replica
   infers it. An unknown task is left to the SDK (task not found); a message
   naming both ids is left as it is (the SDK refuses a mismatch).

A message to a task that has ended gets the SDK's unsupported-operation error
(-32004, "Task ... is in terminal state"), to which this handler adds how to go
on: send the follow-up with the task's contextId and no taskId. Clients that
echo every taskId (the original sample's attacker tool does, when its model
passes one) meet this with agents that complete each turn.

Streams (``SendStreamingMessage``, 0.3 ``message/stream``) get two more rules:

3. every stream begins with a Task or a Message (A2A 1.0 section 3.1.2). When
   the first event the SDK streams is a status or artifact update (always the
   case for a message that continues a task: a2a-sdk 1.3.0 subscribes to the
   task it holds with ``include_initial_task=False``), the stream opens with
   :func:`arena_core.a2a.stream_opening.opening_task`, built from the task as
   stored before the message and sent just before that first event, so a
   refused message is still an error response, never a stream. A stream whose
   first event is already a Task (a new task) or a Message is left as it is:
   nothing is sent twice, and nothing is written to the store;
4. a stream ends with the first status update (or Task) in an interrupted
   state, ``input-required`` or ``auth-required``, as it
   ends at a terminal state: the turn is over. The SDK would keep it open
   until the executor returns; ours return there anyway. This is also what
   lets :class:`arena_core.a2a.v03_stream_final.V03StreamFinal` mark such an
   update as the 0.3 stream's ``final`` event.
"""

from __future__ import annotations

from collections.abc import AsyncGenerator
from typing import Any

from a2a.server.cluster import VersionedTaskStore
from a2a.server.context import ServerCallContext
from a2a.server.events import Event
from a2a.server.request_handlers import DefaultRequestHandler
from a2a.server.tasks import TaskStore
from a2a.types.a2a_pb2 import (
    Message,
    SendMessageRequest,
    Task,
    TaskArtifactUpdateEvent,
    TaskState,
    TaskStatusUpdateEvent,
)
from a2a.utils.errors import UnsupportedOperationError
from a2a.utils.task import apply_history_length

from arena_core.a2a.message_limits import check_message
from arena_core.a2a.stream_opening import opening_task
from arena_core.http_limits import RequestLimits

_ENDED = frozenset(
    {
        TaskState.TASK_STATE_COMPLETED,
        TaskState.TASK_STATE_FAILED,
        TaskState.TASK_STATE_CANCELED,
        TaskState.TASK_STATE_REJECTED,
    }
)
_INTERRUPTED = frozenset({TaskState.TASK_STATE_INPUT_REQUIRED, TaskState.TASK_STATE_AUTH_REQUIRED})


def _ends_the_turn(event: Event) -> bool:
    """Whether ``event`` leaves the task waiting for the client (the stream's last event)."""
    return isinstance(event, TaskStatusUpdateEvent | Task) and event.status.state in _INTERRUPTED


async def stored_task(
    store: TaskStore | VersionedTaskStore, task_id: str, context: ServerCallContext
) -> Task | None:
    """The task ``task_id`` as ``store`` holds it, or None when it holds none."""
    if isinstance(store, VersionedTaskStore):
        stored = await store.get(task_id, context)
        return stored.task if stored is not None else None
    return await store.get(task_id, context)


class ArenaRequestHandler(DefaultRequestHandler):
    """``DefaultRequestHandler`` with the four rules of the module docstring (limits, context, streams)."""

    def __init__(
        self, *, task_store: TaskStore | VersionedTaskStore, limits: RequestLimits, **kwargs: Any
    ) -> None:
        super().__init__(task_store=task_store, **kwargs)
        self._store = task_store
        self._limits = limits

    async def _prepare(
        self, params: SendMessageRequest, context: ServerCallContext, *, read_task: bool = False
    ) -> Task | None:
        """Check the message and infer its contextId; the task it names, when read.

        The task is read when the message names one without a contextId, or
        always with ``read_task``; else (or when the store has no such task)
        None.
        """
        check_message(params.message, self._limits)
        message = params.message
        if not message.task_id or (message.context_id and not read_task):
            return None
        task = await stored_task(self._store, message.task_id, context)
        if task is not None and not message.context_id:
            message.context_id = task.context_id
        return task

    async def _explained(
        self, error: UnsupportedOperationError, message: Message, context: ServerCallContext
    ) -> UnsupportedOperationError:
        """``error``, with how to continue when it refused a message to an ended task."""
        task = await stored_task(self._store, message.task_id, context) if message.task_id else None
        if task is None or task.status.state not in _ENDED:
            return error
        return UnsupportedOperationError(
            message=(
                f"{error.message}: it takes no more messages. To continue the conversation, send the "
                f"message with contextId {task.context_id} and no taskId (a new task in the same context)"
            )
        )

    async def on_message_send(self, params: SendMessageRequest, context: ServerCallContext) -> Message | Task:
        await self._prepare(params, context)
        try:
            return await super().on_message_send(params, context)  # type: ignore[no-any-return]
        except UnsupportedOperationError as exc:
            raise await self._explained(exc, params.message, context) from exc

    async def on_message_send_stream(
        self, params: SendMessageRequest, context: ServerCallContext
    ) -> AsyncGenerator[Event]:
        # Read before the SDK takes the message in: by the first event, the store holds the turn's writes.
        stored = await self._prepare(params, context, read_task=True)
        inner = super().on_message_send_stream(params, context)
        opened = False
        try:
            async for event in inner:
                if not opened:
                    opened = True
                    # Only now, once the SDK has accepted the message: a refusal stays an error response.
                    if isinstance(event, TaskStatusUpdateEvent | TaskArtifactUpdateEvent):
                        opening = opening_task(stored, params.message, event)
                        yield apply_history_length(opening, params.configuration)
                yield event
                if _ends_the_turn(event):
                    return
        except UnsupportedOperationError as exc:
            raise await self._explained(exc, params.message, context) from exc
        finally:
            await inner.aclose()  # as the SDK's own wrapper does: close the inner stream on disconnect


__all__ = ["ArenaRequestHandler", "stored_task"]
