"""A task id this replica has just minted is in no store yet: answer its reads without asking.

A message that names no task starts a new one, and a2a-sdk 1.3 mints its id
(:class:`FreshTaskIds`, handed to the SDK as the request context's task id
generator). Before the first event of that task is saved, the SDK reads the
task three times: when it sets up the active task, when its producer starts
the executor (it drops its snapshot and reads again, to see what another
replica wrote) and when its consumer takes the first event. On Redis each is
a round trip, three of the eight a new turn made (benchmark 1, docs/performance.md).

None of them can find anything: the id is a fresh UUID that nobody has seen,
since the client learns it only from the answer, which comes after the first
save. :class:`FreshTaskShortcut` wraps the task store and answers a read of
a minted, not yet saved id with "no such task" at once. The first save
forgets the id, so every later read goes to the store. The shortcut never
decides anything the store would not: the first save is still the store's
versioned create (``prev_version`` missing), which refuses a task that exists.

The set of minted ids is bounded (:data:`MAX_FRESH_IDS`, oldest dropped): an
id minted for a message that was then refused is never saved, and one dropped
from the set is only read from the store again, as before.
"""

from __future__ import annotations

import uuid

from a2a.server.cluster import StoredTask, TaskVersion, VersionedTaskStore
from a2a.server.context import ServerCallContext
from a2a.server.events import Event
from a2a.server.id_generator import IDGenerator, IDGeneratorContext
from a2a.types.a2a_pb2 import ListTasksRequest, ListTasksResponse, Task

MAX_FRESH_IDS = 4096


class FreshTaskIds(IDGenerator):
    """Mints task ids (random UUIDs) and remembers them until their first save."""

    def __init__(self, limit: int = MAX_FRESH_IDS) -> None:
        self._limit = limit
        self._ids: dict[str, None] = {}  # insertion order: the oldest first

    def generate(self, context: IDGeneratorContext) -> str:
        task_id = str(uuid.uuid4())
        if len(self._ids) >= self._limit:
            del self._ids[next(iter(self._ids))]
        self._ids[task_id] = None
        return task_id

    def is_fresh(self, task_id: str) -> bool:
        """Whether ``task_id`` was minted here and has not been saved since."""
        return task_id in self._ids

    def forget(self, task_id: str) -> None:
        self._ids.pop(task_id, None)

    @property
    def count(self) -> int:
        """How many minted ids are remembered (no ``__len__``: a2a-sdk tests a generator's truth)."""
        return len(self._ids)


class FreshTaskShortcut(VersionedTaskStore):
    """``store``, except that a read of a fresh id (:class:`FreshTaskIds`) finds nothing at once."""

    def __init__(self, store: VersionedTaskStore, fresh: FreshTaskIds) -> None:
        self._store = store
        self._fresh = fresh

    @property
    def inner(self) -> VersionedTaskStore:
        return self._store

    async def save(
        self,
        task: Task,
        *,
        event: Event | None,
        prev: Task | None,
        prev_version: TaskVersion,
        context: ServerCallContext,
    ) -> TaskVersion:
        self._fresh.forget(task.id)  # from now on, the store knows better
        return await self._store.save(
            task, event=event, prev=prev, prev_version=prev_version, context=context
        )

    async def get(self, task_id: str, context: ServerCallContext) -> StoredTask | None:
        if self._fresh.is_fresh(task_id):
            return None
        return await self._store.get(task_id, context)

    async def list(self, params: ListTasksRequest, context: ServerCallContext) -> ListTasksResponse:
        return await self._store.list(params, context)

    async def delete(self, task_id: str, context: ServerCallContext) -> None:
        self._fresh.forget(task_id)
        await self._store.delete(task_id, context)


__all__ = ["MAX_FRESH_IDS", "FreshTaskIds", "FreshTaskShortcut"]
