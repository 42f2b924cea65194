"""In-memory ``VersionedTaskStore`` and ``TaskEventStream`` for single-process agents.

The same rules as :class:`~arena_core.redis_state.RedisTaskStore` (one
contract test suite covers both), kept in one process: the embedded default
when ``ARENA_REDIS_URL`` is unset. Unlike a2a-sdk's ``InMemoryTaskStore`` it
does not keep every task forever: tasks (with their events) expire
``ttl_s`` after their last write, and at most ``max_tasks`` are held (least
recently written evicted first). Expiry never scans all tasks: the oldest are
at the front of the write order.

The store is not a container: it has no ``len()`` and is always true, even
empty. An empty store that tested false once made ``task_store or
InMemoryTaskStore()`` swap it for a2a-sdk's unbounded, unversioned store, so
agents without Redis kept every task and its whole history (issue 16).
"""

from __future__ import annotations

import asyncio
import time
from collections import OrderedDict, deque
from collections.abc import AsyncGenerator, Callable
from dataclasses import dataclass, field

from a2a.server.cluster import (
    ConcurrentTaskModificationError,
    StoredTask,
    TaskEventStream,
    TaskVersion,
    VersionedEvent,
    VersionedTaskStore,
)
from a2a.server.context import ServerCallContext
from a2a.server.events.event_queue import Event
from a2a.server.owner_resolver import resolve_user_scope
from a2a.types.a2a_pb2 import ListTasksRequest, ListTasksResponse, StreamResponse, Task, TaskState
from a2a.utils.proto_utils import to_stream_response

from arena_core.redis_state.redis_task_event_stream import ends_subscription, event_from_stream_response
from arena_core.task_listing import list_response
from arena_core.task_retention import trim_history

Clock = Callable[[], float]
OwnerResolver = Callable[[ServerCallContext], str]

_TERMINAL = frozenset(
    {
        TaskState.TASK_STATE_COMPLETED,
        TaskState.TASK_STATE_FAILED,
        TaskState.TASK_STATE_CANCELED,
        TaskState.TASK_STATE_REJECTED,
    }
)


@dataclass(slots=True)
class _Entry:
    owner: str
    version: int
    data: bytes
    written: float
    events: deque[tuple[int, bytes]]
    changed: asyncio.Event = field(default_factory=asyncio.Event)


class InMemoryVersionedTaskStore(VersionedTaskStore):
    """Versioned tasks in one process, bounded by age and count.

    Each saved task keeps the newest ``history_max_messages`` messages of its history
    (None: all), exactly as ``RedisTaskStore`` does (:func:`~arena_core.task_retention.trim_history`).
    """

    def __init__(
        self,
        *,
        ttl_s: float = 86_400.0,
        max_tasks: int = 100_000,
        stream_maxlen: int = 1000,
        clock: Clock = time.monotonic,
        owner_resolver: OwnerResolver = resolve_user_scope,
        history_max_messages: int | None = None,
    ) -> None:
        self._history_max = history_max_messages
        self._ttl_s = ttl_s
        self._max_tasks = max_tasks
        self._maxlen = stream_maxlen
        self._clock = clock
        self._owner = owner_resolver
        self._tasks: OrderedDict[str, _Entry] = OrderedDict()

    @property
    def task_count(self) -> int:
        """How many tasks are held now, expired ones not yet dropped included."""
        return len(self._tasks)

    async def save(
        self,
        task: Task,
        *,
        event: Event | None,
        prev: Task | None,
        prev_version: TaskVersion,
        context: ServerCallContext,
    ) -> TaskVersion:
        """Persist ``task``; the same rules as ``RedisTaskStore.save``."""
        del prev
        now = self._clock()
        self._expire(now)
        owner = self._owner(context)
        entry = self._tasks.get(task.id)
        if entry is not None and entry.owner != owner:
            raise ConcurrentTaskModificationError(task.id)
        if task.status.state == TaskState.TASK_STATE_CANCELED:
            if entry is None or Task.FromString(entry.data).status.state in _TERMINAL:
                raise ConcurrentTaskModificationError(task.id)
            version = entry.version + 1
        elif prev_version.is_missing:
            if entry is not None:
                raise ConcurrentTaskModificationError(task.id)
            version = 1
        else:
            if entry is None or prev_version != TaskVersion(entry.version):
                raise ConcurrentTaskModificationError(task.id)
            version = entry.version + 1
        if entry is None:
            entry = _Entry(owner, version, b"", now, deque(maxlen=self._maxlen))
            self._tasks[task.id] = entry
        else:
            self._tasks.move_to_end(task.id)
        entry.version = version
        entry.data = trim_history(task, self._history_max).SerializeToString()
        entry.written = now
        if event is not None:
            entry.events.append((version, to_stream_response(event).SerializeToString()))
        entry.changed.set()
        entry.changed = asyncio.Event()
        while len(self._tasks) > self._max_tasks:
            self._drop(next(iter(self._tasks)))
        return TaskVersion(version)

    async def get(self, task_id: str, context: ServerCallContext) -> StoredTask | None:
        """The task with its version, or None if absent, expired or another owner's."""
        self._expire(self._clock())
        entry = self._tasks.get(task_id)
        if entry is None or entry.owner != self._owner(context):
            return None
        return StoredTask(Task.FromString(entry.data), TaskVersion(entry.version))

    async def list(self, params: ListTasksRequest, context: ServerCallContext) -> ListTasksResponse:
        """The caller's tasks, filtered and paginated as the spec defines."""
        self._expire(self._clock())
        owner = self._owner(context)
        tasks = [Task.FromString(e.data) for e in self._tasks.values() if e.owner == owner]
        return list_response(tasks, params)

    async def delete(self, task_id: str, context: ServerCallContext) -> None:
        """Forget the task and its events (no error if absent)."""
        entry = self._tasks.get(task_id)
        if entry is not None and entry.owner == self._owner(context):
            self._drop(task_id)

    def entry(self, task_id: str) -> _Entry | None:
        """The live entry of ``task_id`` (for the event stream)."""
        self._expire(self._clock())
        return self._tasks.get(task_id)

    def _drop(self, task_id: str) -> None:
        entry = self._tasks.pop(task_id, None)
        if entry is not None:
            entry.changed.set()  # wake subscribers so they notice the task is gone

    def _expire(self, now: float) -> None:
        while self._tasks:
            task_id, oldest = next(iter(self._tasks.items()))
            if now - oldest.written < self._ttl_s:
                return
            self._drop(task_id)


class InMemoryTaskEventStream(TaskEventStream):
    """Task events of an :class:`InMemoryVersionedTaskStore`, for resubscription."""

    def __init__(self, store: InMemoryVersionedTaskStore) -> None:
        self._store = store

    async def publish(self, task_id: str, event: VersionedEvent) -> None:
        """Nothing to do: the store recorded the event when it saved the task."""
        del task_id, event

    async def subscribe(self, task_id: str, *, after: TaskVersion) -> AsyncGenerator[VersionedEvent, None]:
        """Yield events newer than ``after``; end like ``RedisTaskEventStream.subscribe``."""
        floor = after
        while True:
            entry = self._store.entry(task_id)
            if entry is None:
                return
            waiter = entry.changed
            for version, data in list(entry.events):
                versioned = TaskVersion(version)
                if not versioned.is_after(floor):
                    continue
                floor = versioned
                event = event_from_stream_response(StreamResponse.FromString(data))
                yield VersionedEvent(event=event, version=versioned)
                if ends_subscription(event):
                    return
            await waiter.wait()

    async def destroy(self, task_id: str) -> None:
        """Drop the task's recorded events."""
        entry = self._store.entry(task_id)
        if entry is not None:
            entry.events.clear()


__all__ = ["InMemoryTaskEventStream", "InMemoryVersionedTaskStore"]
