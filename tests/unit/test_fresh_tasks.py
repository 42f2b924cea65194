"""FreshTaskIds and FreshTaskShortcut (arena_core.a2a.fresh_tasks).

Minted ids are remembered (boundedly) until their first save, and reads of them skip the store.
"""

from __future__ import annotations

import uuid

import pytest
from a2a.server.agent_execution import RequestContext
from a2a.server.cluster import TaskVersion
from a2a.server.context import ServerCallContext
from a2a.server.id_generator import IDGeneratorContext
from a2a.types.a2a_pb2 import Message, Part, Role, SendMessageRequest, Task, TaskState, TaskStatus

from arena_core.a2a.fresh_tasks import FreshTaskIds, FreshTaskShortcut
from arena_core.memory_cluster_state import InMemoryVersionedTaskStore

CONTEXT = ServerCallContext()


class CountingStore(InMemoryVersionedTaskStore):
    def __init__(self) -> None:
        super().__init__()
        self.reads = 0

    async def get(self, task_id: str, context: ServerCallContext):  # type: ignore[no-untyped-def]
        self.reads += 1
        return await super().get(task_id, context)


def _task(task_id: str) -> Task:
    return Task(id=task_id, context_id="c", status=TaskStatus(state=TaskState.TASK_STATE_SUBMITTED))


def test_a2a_sdk_uses_the_generator_it_is_given() -> None:
    # The SDK falls back to its own generator when the one given is falsy: ours must never be.
    fresh = FreshTaskIds()
    request = SendMessageRequest(
        message=Message(message_id="m", role=Role.ROLE_USER, parts=[Part(text="hi")])
    )
    context = RequestContext(call_context=CONTEXT, request=request, task_id_generator=fresh)
    assert context.task_id is not None and fresh.is_fresh(context.task_id)


def test_minted_ids_are_uuids_and_the_oldest_are_dropped_beyond_the_limit() -> None:
    fresh = FreshTaskIds(limit=3)
    ids = [fresh.generate(IDGeneratorContext()) for _ in range(4)]
    assert len(set(ids)) == 4 and all(uuid.UUID(i) for i in ids)
    assert not fresh.is_fresh(ids[0]) and all(fresh.is_fresh(i) for i in ids[1:])
    assert fresh.count == 3
    fresh.forget(ids[2])
    fresh.forget("never minted")
    assert fresh.count == 2 and not fresh.is_fresh(ids[2])


@pytest.mark.asyncio
async def test_a_fresh_id_is_not_read_until_its_first_save() -> None:
    inner = CountingStore()
    fresh = FreshTaskIds()
    store = FreshTaskShortcut(inner, fresh)
    minted = fresh.generate(IDGeneratorContext())
    assert await store.get(minted, CONTEXT) is None and inner.reads == 0
    assert await store.get("someone-elses", CONTEXT) is None and inner.reads == 1

    version = await store.save(
        _task(minted), event=None, prev=None, prev_version=TaskVersion.MISSING, context=CONTEXT
    )
    assert not fresh.is_fresh(minted)
    stored = await store.get(minted, CONTEXT)
    assert stored is not None and stored.task.id == minted and stored.version == version and inner.reads == 2


@pytest.mark.asyncio
async def test_a_deleted_fresh_id_is_forgotten() -> None:
    inner = CountingStore()
    fresh = FreshTaskIds()
    store = FreshTaskShortcut(inner, fresh)
    minted = fresh.generate(IDGeneratorContext())
    await store.delete(minted, CONTEXT)
    assert not fresh.is_fresh(minted) and store.inner is inner
