"""The Task a stream opens with when the agent's first event is an update (opening_task)."""

from __future__ import annotations

from datetime import UTC, datetime

from a2a.types.a2a_pb2 import (
    Artifact,
    Message,
    Part,
    Role,
    Task,
    TaskArtifactUpdateEvent,
    TaskState,
    TaskStatus,
    TaskStatusUpdateEvent,
)

from arena_core.a2a.stream_opening import opening_task

NOW = datetime(2026, 1, 2, 3, 4, 5, tzinfo=UTC)


def _message(message_id: str, *, agent: bool = False) -> Message:
    role = Role.ROLE_AGENT if agent else Role.ROLE_USER
    return Message(message_id=message_id, role=role, parts=[Part(text=message_id)])


def test_a_follow_up_opens_with_the_stored_task_working_on_the_new_message() -> None:
    stored = Task(
        id="t",
        context_id="c",
        history=[_message("one")],
        status=TaskStatus(state=TaskState.TASK_STATE_INPUT_REQUIRED, message=_message("reply", agent=True)),
        artifacts=[Artifact(artifact_id="a", parts=[Part(text="kept")])],
    )
    before = Task()
    before.CopyFrom(stored)
    message = _message("two")
    update = TaskStatusUpdateEvent(task_id="t", context_id="c")
    task = opening_task(stored, message, update, now=NOW)
    assert (task.id, task.context_id) == ("t", "c")
    assert task.status.state == TaskState.TASK_STATE_WORKING and not task.status.HasField("message")
    assert task.status.timestamp.ToDatetime(tzinfo=UTC) == NOW
    # As a2a-sdk takes a message in: the last reply moves to the history, then the new message.
    assert [m.message_id for m in task.history] == ["one", "reply", "two"]
    assert (task.history[-1].task_id, task.history[-1].context_id) == ("t", "c")
    assert [a.artifact_id for a in task.artifacts] == ["a"]
    assert stored == before and not message.task_id  # the inputs are not changed


def test_a_new_task_opens_submitted_with_the_message_as_its_history() -> None:
    update = TaskArtifactUpdateEvent(task_id="new", context_id="ctx", artifact=Artifact(artifact_id="a"))
    task = opening_task(None, _message("hello"), update, now=NOW)
    assert (task.id, task.context_id) == ("new", "ctx")
    assert task.status.state == TaskState.TASK_STATE_SUBMITTED
    assert [m.message_id for m in task.history] == ["hello"]
    assert not task.artifacts  # the artifact is the event that follows
