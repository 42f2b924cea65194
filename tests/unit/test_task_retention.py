"""Task history retention (``trim_history`` and the in-memory store's bound) and GC tuning."""

from __future__ import annotations

import gc
import itertools

import pytest
from a2a.server.cluster import TaskVersion
from a2a.server.context import ServerCallContext
from a2a.types.a2a_pb2 import ListTasksRequest, Message, Part, Role, Task, TaskState, TaskStatus

from arena_core.gc_tuning import SERVING_THRESHOLDS, tune_for_serving
from arena_core.memory_cluster_state import InMemoryVersionedTaskStore
from arena_core.task_retention import trim_history

CONTEXT = ServerCallContext()


def _message(index: int) -> Message:
    role = Role.ROLE_USER if index % 2 == 0 else Role.ROLE_AGENT
    return Message(message_id=f"m{index}", role=role, parts=[Part(text=f"text {index}")], task_id="t1")


def _task(history_size: int, task_id: str = "t1") -> Task:
    reply = Message(message_id="reply", role=Role.ROLE_AGENT, parts=[Part(text="latest reply")])
    return Task(
        id=task_id,
        context_id="ctx",
        status=TaskStatus(state=TaskState.TASK_STATE_INPUT_REQUIRED, message=reply),
        history=[_message(index) for index in range(history_size)],
    )


def _ids(task: Task) -> list[str]:
    return [message.message_id for message in task.history]


# --- trim_history ------------------------------------------------------------------------


def test_within_the_bound_the_task_itself_is_returned() -> None:
    task = _task(3)
    assert trim_history(task, 4) is task
    assert _ids(task) == ["m0", "m1", "m2"]


def test_no_bound_returns_the_task_itself() -> None:
    task = _task(500)
    assert trim_history(task, None) is task
    assert len(task.history) == 500


def test_a_bound_equal_to_the_length_is_identity() -> None:
    task = _task(4)
    assert trim_history(task, 4) is task
    assert _ids(task) == ["m0", "m1", "m2", "m3"]


def test_an_empty_history_is_identity() -> None:
    task = _task(0)
    assert trim_history(task, 4) is task


def test_over_the_bound_a_copy_keeps_the_newest_in_order() -> None:
    task = _task(10)
    before = task.SerializeToString()
    trimmed = trim_history(task, 4)
    assert trimmed is not task
    assert _ids(trimmed) == ["m6", "m7", "m8", "m9"]
    assert [part.text for message in trimmed.history for part in message.parts] == [
        "text 6",
        "text 7",
        "text 8",
        "text 9",
    ]
    # The caller's task is not changed.
    assert _ids(task) == [f"m{index}" for index in range(10)]
    assert task.SerializeToString() == before


def test_the_trimmed_copy_keeps_everything_but_the_old_history() -> None:
    task = _task(10)
    trimmed = trim_history(task, 2)
    assert trimmed.status == task.status
    assert trimmed.status.message.message_id == "reply"
    assert trimmed.status.message.parts[0].text == "latest reply"
    assert trimmed.status.state == TaskState.TASK_STATE_INPUT_REQUIRED
    assert (trimmed.id, trimmed.context_id) == (task.id, task.context_id)
    expected = Task()
    expected.CopyFrom(task)
    del expected.history[:8]
    assert trimmed == expected


def test_one_over_the_bound_drops_only_the_oldest() -> None:
    task = _task(5)
    assert _ids(trim_history(task, 4)) == ["m1", "m2", "m3", "m4"]


def test_a_copy_is_independent_of_the_original() -> None:
    task = _task(6)
    trimmed = trim_history(task, 3)
    trimmed.history[0].parts[0].text = "changed"
    trimmed.status.message.parts[0].text = "changed"
    assert task.history[3].parts[0].text == "text 3"
    assert task.status.message.parts[0].text == "latest reply"


# --- InMemoryVersionedTaskStore(history_max_messages=...) --------------------------------


async def _grow(store: InMemoryVersionedTaskStore, turns: int) -> list[TaskVersion]:
    """Save task t1 ``turns`` times, two more history messages each time (like a2a-sdk does)."""
    versions: list[TaskVersion] = []
    previous = TaskVersion.MISSING
    for turn in range(1, turns + 1):
        task = _task(2 * turn)
        previous = await store.save(task, event=task, prev=None, prev_version=previous, context=CONTEXT)
        versions.append(previous)
    return versions


@pytest.mark.asyncio
async def test_memory_store_keeps_the_newest_messages() -> None:
    store = InMemoryVersionedTaskStore(history_max_messages=4)
    versions = await _grow(store, 6)
    stored = await store.get("t1", CONTEXT)
    assert stored is not None
    assert _ids(stored.task) == ["m8", "m9", "m10", "m11"]
    assert stored.version == versions[-1]
    assert stored.task.status.message.message_id == "reply"
    assert stored.task.status.state == TaskState.TASK_STATE_INPUT_REQUIRED
    # Versions count writes, unaffected by the trimming.
    assert versions == [TaskVersion(index) for index in range(1, 7)]
    assert all(later.is_after(earlier) for earlier, later in itertools.pairwise(versions))


@pytest.mark.asyncio
async def test_memory_store_within_the_bound_keeps_everything() -> None:
    store = InMemoryVersionedTaskStore(history_max_messages=4)
    await _grow(store, 2)
    stored = await store.get("t1", CONTEXT)
    assert stored is not None
    assert _ids(stored.task) == ["m0", "m1", "m2", "m3"]


@pytest.mark.asyncio
async def test_memory_store_does_not_change_the_saved_task() -> None:
    store = InMemoryVersionedTaskStore(history_max_messages=4)
    task = _task(10)
    await store.save(task, event=None, prev=None, prev_version=TaskVersion.MISSING, context=CONTEXT)
    assert len(task.history) == 10
    stored = await store.get("t1", CONTEXT)
    assert stored is not None
    assert len(stored.task.history) == 4


@pytest.mark.asyncio
async def test_memory_store_without_a_bound_keeps_every_message() -> None:
    store = InMemoryVersionedTaskStore()
    versions = await _grow(store, 6)
    stored = await store.get("t1", CONTEXT)
    assert stored is not None
    assert _ids(stored.task) == [f"m{index}" for index in range(12)]
    assert stored.version == versions[-1]


def test_an_empty_memory_store_is_true() -> None:
    # An empty store that tested false made `task_store or InMemoryTaskStore()` swap it for
    # a2a-sdk's unbounded store: agents without Redis kept every message (issue 16).
    store = InMemoryVersionedTaskStore(history_max_messages=4)
    assert store
    assert store.task_count == 0


@pytest.mark.asyncio
async def test_memory_store_lists_the_trimmed_task() -> None:
    store = InMemoryVersionedTaskStore(history_max_messages=4)
    await _grow(store, 5)
    listed = await store.list(ListTasksRequest(), CONTEXT)
    assert [task.id for task in listed.tasks] == ["t1"]
    # list() may apply its own history_length rules; it never shows more than the store keeps.
    assert len(listed.tasks[0].history) <= 4


# --- gc tuning -----------------------------------------------------------------------------


def test_tune_for_serving_freezes_and_raises_thresholds() -> None:
    old = gc.get_threshold()
    try:
        tune_for_serving()
        assert gc.get_threshold() == SERVING_THRESHOLDS
        assert gc.get_freeze_count() > 0
        assert gc.isenabled()
        tune_for_serving()  # idempotent
        assert gc.get_threshold() == SERVING_THRESHOLDS
    finally:
        gc.set_threshold(*old)
        gc.unfreeze()
    assert gc.get_threshold() == old
    assert gc.get_freeze_count() == 0
