"""``RedisTaskEventStream``: a2a-sdk's ``TaskEventStream`` on Redis Streams.

Events are appended by :class:`RedisTaskStore.save` in the same atomic script
as the task write, so ``publish`` has nothing left to do. ``subscribe(after=v)``
replays the task's stream entries newer than ``v`` and then tails it with
``XREAD BLOCK``; it ends after a Message or a status in a terminal or
interrupted state (what the SDK's remote subscription waits for), or when the
task has expired. ``destroy`` deletes the stream (a2a-sdk 1.3 never calls it;
streams expire with their task).
"""

from __future__ import annotations

from collections.abc import AsyncGenerator
from typing import Any

from a2a.server.cluster import TaskEventStream, TaskVersion, VersionedEvent
from a2a.server.events.event_queue import Event
from a2a.types.a2a_pb2 import Message, StreamResponse, Task, TaskState, TaskStatusUpdateEvent

from arena_core.redis_state.connection import RedisClients, a2a_errors

_INTERRUPTED_OR_TERMINAL = frozenset(
    {
        TaskState.TASK_STATE_COMPLETED,
        TaskState.TASK_STATE_FAILED,
        TaskState.TASK_STATE_CANCELED,
        TaskState.TASK_STATE_REJECTED,
        TaskState.TASK_STATE_INPUT_REQUIRED,
        TaskState.TASK_STATE_AUTH_REQUIRED,
    }
)


def event_from_stream_response(response: StreamResponse) -> Event:
    """The SDK event carried by a stored ``StreamResponse``."""
    kind = response.WhichOneof("payload")
    if kind == "task":
        return response.task
    if kind == "message":
        return response.message
    if kind == "status_update":
        return response.status_update
    if kind == "artifact_update":
        return response.artifact_update
    raise ValueError(f"stored event has no payload ({kind!r})")


def ends_subscription(event: Event) -> bool:
    """True for a Message, or a Task/status update in a terminal or interrupted state."""
    if isinstance(event, Message):
        return True
    if isinstance(event, Task | TaskStatusUpdateEvent):
        return event.status.state in _INTERRUPTED_OR_TERMINAL
    return False


def _int_version(version: TaskVersion) -> int:
    value = version._value
    return int(value)


class RedisTaskEventStream(TaskEventStream):
    """Cross-replica task events through one Redis Stream per task."""

    def __init__(self, clients: RedisClients) -> None:
        self._redis = clients.commands
        self._blocking = clients.blocking
        self._keys = clients.keys
        self._block_ms = clients.config.block_ms

    async def publish(self, task_id: str, event: VersionedEvent) -> None:
        """Nothing to do: :class:`RedisTaskStore` appended the event atomically with the task."""
        del task_id, event

    async def subscribe(self, task_id: str, *, after: TaskVersion) -> AsyncGenerator[VersionedEvent, None]:
        """Yield the events of ``task_id`` newer than ``after`` (see the module doc)."""
        stream = self._keys.task_events(task_id)
        floor = 0 if after.is_missing else _int_version(after)
        async with a2a_errors("replaying task events"):
            entries: Any = await self._redis.xrange(stream, min="-", max="+")
        last_id = "0-0"
        while True:
            if entries:
                last_id = entries[-1][0]
                events, ended = _events_after(entries, floor)
                for versioned in events:
                    yield versioned
                if ended:
                    return
            async with a2a_errors("waiting for task events"):
                batch: Any = await self._blocking.xread({stream: last_id}, block=self._block_ms, count=100)
            if not batch:
                async with a2a_errors("checking a task"):
                    if not await self._redis.exists(self._keys.task(task_id)):
                        return
            entries = [entry for _, stream_entries in batch or () for entry in stream_entries]

    async def destroy(self, task_id: str) -> None:
        """Delete the task's stream now instead of at expiry."""
        async with a2a_errors("deleting task events"):
            await self._redis.delete(self._keys.task_events(task_id))


def _events_after(entries: Any, floor: int) -> tuple[list[VersionedEvent], bool]:
    """The events of stream ``entries`` newer than ``floor``, up to the first that ends the
    subscription, and whether one did."""
    events: list[VersionedEvent] = []
    for _entry_id, fields in entries:
        versioned = _decode(fields)
        if _int_version(versioned.version) > floor:
            events.append(versioned)
            if ends_subscription(versioned.event):
                return events, True
    return events, False


def _decode(fields: dict[bytes, bytes]) -> VersionedEvent:
    response = StreamResponse.FromString(fields[b"e"])
    return VersionedEvent(event=event_from_stream_response(response), version=TaskVersion(int(fields[b"v"])))


__all__ = ["RedisTaskEventStream", "ends_subscription", "event_from_stream_response"]
