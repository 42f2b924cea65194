"""How the arena's agent executors start handling a message: the task it belongs to.

Both agents (defender and attacker) answer a message in a task: a new one, which the executor
must announce (a2a-sdk creates it from the first event), or the task the message continues.
"""

from __future__ import annotations

from a2a.helpers import new_task_from_user_message
from a2a.server.agent_execution import RequestContext
from a2a.server.events import EventQueue
from a2a.server.tasks import TaskUpdater
from a2a.types.a2a_pb2 import Message


async def open_task(context: RequestContext, event_queue: EventQueue) -> tuple[Message, TaskUpdater] | None:
    """The request's message and an updater of its task, the task announced first when it is new.

    None when the request carries no message, task id or context id (the SDK always fills them
    for a message send; an executor then has nothing to answer).
    """
    message = context.message
    task_id, context_id = context.task_id, context.context_id
    if message is None or task_id is None or context_id is None:
        return None
    if context.current_task is None:
        await event_queue.enqueue_event(new_task_from_user_message(message))
    return message, TaskUpdater(event_queue, task_id, context_id)


__all__ = ["open_task"]
