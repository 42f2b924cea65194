"""The Task a SendStreamingMessage stream opens with when the agent's first event is an update.

A2A 1.0 section 3.1.2: a task lifecycle stream "MUST begin with the Task
object, followed by zero or more" status and artifact updates; a stream that
is not about a task holds exactly one Message. For a new task the executor
enqueues the Task first (a2a-sdk requires it before any status update), but a
message that continues a task (``taskId`` of a task parked in
``input-required``) runs on the task the SDK already holds, and a2a-sdk 1.3.0
streams only what the executor enqueues after it (its request handler
subscribes with ``include_initial_task=False``): the stream opens with a
status update.

:func:`opening_task` is the Task sent before such a stream's first event. It
is built, never stored, from what is known before the agent spoke:

* the task as the store held it when the message arrived (``stored``), or,
  for a new task whose executor's first event is an update, a new task with
  the first event's ids and no history;
* its history extended the way a2a-sdk extends it when it takes a message in
  (``TaskManager.update_with_message``): the status message (the agent's
  last reply) moves into the history, then the new message is appended; so
  the history of the task the stream opens with is the history the store
  holds once the turn's first event is saved;
* its state: ``submitted`` for a new task (what a2a-sdk creates for it),
  ``working`` for a task that takes a follow-up (the state an interrupted task
  moves to when it gets its input). Not the stored state: a Task in
  ``input-required`` with the previous reply opening the stream would read,
  to a client that ends a turn at an interrupted Task, as this turn's answer.
"""

from __future__ import annotations

from datetime import UTC, datetime

from a2a.types.a2a_pb2 import (
    Message,
    Task,
    TaskArtifactUpdateEvent,
    TaskState,
    TaskStatus,
    TaskStatusUpdateEvent,
)


def opening_task(
    stored: Task | None,
    message: Message,
    first_event: TaskStatusUpdateEvent | TaskArtifactUpdateEvent,
    *,
    now: datetime | None = None,
) -> Task:
    """The Task a stream opens with, before ``first_event``, for ``message`` sent to ``stored``.

    ``stored`` is the task as the store held it before the message was
    processed, None for a new task. ``now`` (default: the current UTC time)
    stamps the status. The result is a new object; ``stored`` and ``message``
    are not changed.
    """
    task = Task()
    if stored is not None:
        task.CopyFrom(stored)
        state = TaskState.TASK_STATE_WORKING
    else:
        task.id, task.context_id = first_event.task_id, first_event.context_id
        state = TaskState.TASK_STATE_SUBMITTED
    if task.status.HasField("message"):
        task.history.append(task.status.message)
    taken = task.history.add()
    taken.CopyFrom(message)
    taken.task_id, taken.context_id = task.id, task.context_id
    task.status.CopyFrom(TaskStatus(state=state))
    task.status.timestamp.FromDatetime(now or datetime.now(UTC))
    return task


__all__ = ["opening_task"]
