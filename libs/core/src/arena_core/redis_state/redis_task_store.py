"""``RedisTaskStore``: a2a-sdk's ``VersionedTaskStore`` on Redis.

``save`` is one Lua script (:data:`~arena_core.redis_state.scripts.SAVE_TASK`):
version compare-and-swap, task write, index updates and the append of the
event to the task's stream happen atomically, so replicas sharing a Redis see
one linear history per task. Versions count writes (1 for the first). On a Redis
Cluster the owner's indexes live in another slot than the task: the task's write
(compare-and-swap, hash, event) is one script as before, the index entries a second
one after it (ADR 0022). A save interrupted between the two leaves the task unlisted
until its next save; reads by id never depend on the indexes.

Rules (a2a-sdk ``VersionedTaskStore.save``): ``TaskVersion.MISSING`` is a first
write and fails if the task exists; any other ``prev_version`` must equal the
stored version; a write moving the task to CANCELED skips the version check
but fails if the task is absent or already terminal. Every failed rule raises
``ConcurrentTaskModificationError``.

A task's message history is kept to its newest ``history_max_messages`` messages
(:mod:`arena_core.task_retention`). Tasks, their event streams and the indexes
expire ``task_ttl_s`` after their last write (a2a-sdk never calls ``destroy()``).
Tasks are scoped by owner (the SDK's owner resolver): another owner's task reads
as absent.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from typing import Any, cast

from a2a.server.cluster import ConcurrentTaskModificationError, StoredTask, TaskVersion, VersionedTaskStore
from a2a.server.context import ServerCallContext
from a2a.server.events.event_queue import Event
from a2a.server.owner_resolver import resolve_user_scope
from a2a.types.a2a_pb2 import ListTasksRequest, ListTasksResponse, Task, TaskState
from a2a.utils.proto_utils import to_stream_response
from redis.exceptions import ResponseError

from arena_core.redis_state.connection import RedisClients, a2a_errors
from arena_core.redis_state.scripts import INDEX_TASK, SAVE_TASK, SAVE_TASK_ONLY
from arena_core.task_listing import list_response, sort_key
from arena_core.task_retention import trim_history

OwnerResolver = Callable[[ServerCallContext], str]

TERMINAL_STATES = (
    TaskState.TASK_STATE_COMPLETED,
    TaskState.TASK_STATE_FAILED,
    TaskState.TASK_STATE_CANCELED,
    TaskState.TASK_STATE_REJECTED,
)
_TERMINAL_ARG = ",".join(str(int(state)) for state in TERMINAL_STATES)
_LIST_BATCH = 100


def index_score(task: Task) -> float:
    """The index score: status time in microseconds (exact in a double), -1 without one."""
    has_timestamp, nanos, _ = sort_key(task)
    return float(nanos // 1000) if has_timestamp else -1.0


def _version_of(stored: TaskVersion) -> int:
    value = stored._value
    if not isinstance(value, int):
        raise TypeError(f"RedisTaskStore needs integer versions, got {type(value).__name__}")
    return value


class RedisTaskStore(VersionedTaskStore):
    """A ``VersionedTaskStore`` shared by every replica through Redis."""

    def __init__(
        self,
        clients: RedisClients,
        *,
        owner_resolver: OwnerResolver = resolve_user_scope,
        history_max_messages: int | None = None,
    ) -> None:
        self._history_max = history_max_messages
        self._redis = clients.commands
        self._keys = clients.keys
        self._ttl_ms = int(clients.config.task_ttl_s * 1000)
        self._maxlen = clients.config.stream_maxlen
        self._owner = owner_resolver
        self._cluster = clients.cluster
        self._save = self._redis.register_script(SAVE_TASK_ONLY if self._cluster else SAVE_TASK)
        self._index = self._redis.register_script(INDEX_TASK)

    async def save(
        self,
        task: Task,
        *,
        event: Event | None,
        prev: Task | None,
        prev_version: TaskVersion,
        context: ServerCallContext,
    ) -> TaskVersion:
        """Persist ``task`` (and append ``event``) atomically; see the module rules."""
        del prev
        task = trim_history(task, self._history_max)
        owner = self._owner(context)
        cancel = task.status.state == TaskState.TASK_STATE_CANCELED
        event_bytes = to_stream_response(event).SerializeToString() if event is not None else b""
        task_keys = [self._keys.task(task.id), self._keys.task_events(task.id)]
        index_keys = [
            self._keys.owner_tasks(owner),
            self._keys.owner_context_tasks(owner, task.context_id),
            self._keys.owner_expiry(owner),
        ]
        score = index_score(task)
        args: list[str | bytes | int | float] = [
            owner,
            0 if prev_version.is_missing else _version_of(prev_version),
            "1" if cancel else "0",
            task.SerializeToString(),
            event_bytes,
            task.context_id,
            int(task.status.state),
            score,
            task.id,
            self._ttl_ms,
            self._maxlen,
            _TERMINAL_ARG,
        ]
        async with a2a_errors("saving a task"):
            try:
                version = await self._save(
                    keys=task_keys if self._cluster else task_keys + index_keys, args=args
                )
            except ResponseError as exc:
                if str(exc).startswith("CONFLICT"):
                    raise ConcurrentTaskModificationError(task.id) from exc
                raise
            if self._cluster:
                await self._index(keys=index_keys, args=[score, task.id, self._ttl_ms, task.context_id])
        return TaskVersion(int(version))

    async def get(self, task_id: str, context: ServerCallContext) -> StoredTask | None:
        """The task with its version, or None if absent, expired or another owner's."""
        async with a2a_errors("reading a task"):
            row: Any = await self._redis.hmget(self._keys.task(task_id), ["o", "v", "d"])
        owner, version, data = row
        if data is None or owner is None or owner.decode() != self._owner(context):
            return None
        return StoredTask(Task.FromString(data), TaskVersion(int(version)))

    async def delete(self, task_id: str, context: ServerCallContext) -> None:
        """Delete the task, its event stream and its index entries (no error if absent)."""
        owner = self._owner(context)
        task_key = self._keys.task(task_id)
        async with a2a_errors("deleting a task"):
            row: Any = await self._redis.hmget(task_key, ["o", "c"])
            stored_owner, context_id = row
            if stored_owner is not None and stored_owner.decode() != owner:
                return
            # Not a transaction: the task's keys and its owner's indexes may sit in different slots
            # of a cluster, and a listing drops index entries whose task is gone anyway.
            async with self._redis.pipeline(transaction=False) as pipe:
                pipe.delete(task_key, self._keys.task_events(task_id))
                pipe.zrem(self._keys.owner_tasks(owner), task_id)
                pipe.zrem(self._keys.owner_expiry(owner), task_id)
                if context_id:
                    pipe.zrem(self._keys.owner_context_tasks(owner, context_id.decode()), task_id)
                await pipe.execute()

    async def list(self, params: ListTasksRequest, context: ServerCallContext) -> ListTasksResponse:
        """List the caller's tasks with the spec's filters and cursor pagination.

        Reads the owner's index (or the context's, when filtered by context),
        which retention keeps bounded; see :mod:`arena_core.task_listing`.
        """
        owner = self._owner(context)
        index = (
            self._keys.owner_context_tasks(owner, params.context_id)
            if params.context_id
            else self._keys.owner_tasks(owner)
        )
        async with a2a_errors("listing tasks"):
            tasks = [task async for task in self._scan(index, owner)]
        return list_response(tasks, params)

    async def _scan(self, index: str, owner: str) -> AsyncIterator[Task]:
        """Yield the owner's tasks named by ``index``, in batches; drop stale entries."""
        offset = 0
        while True:
            ids: list[bytes] = cast(
                "list[bytes]", await self._redis.zrevrange(index, offset, offset + _LIST_BATCH - 1)
            )
            if not ids:
                return
            async with self._redis.pipeline(transaction=False) as pipe:
                for raw in ids:
                    pipe.hmget(self._keys.task(raw.decode()), ["o", "d"])
                rows: Any = await pipe.execute()
            stale = []
            for raw, (stored_owner, data) in zip(ids, rows, strict=True):
                if data is None:
                    stale.append(raw)
                elif stored_owner is not None and stored_owner.decode() == owner:
                    yield Task.FromString(data)
            if stale:
                # Expired tasks leave their index lazily.
                await self._redis.zrem(index, *stale)
            offset += len(ids) - len(stale)
            if len(ids) < _LIST_BATCH:
                return


__all__ = ["TERMINAL_STATES", "RedisTaskStore", "index_score"]
