"""How much of a task's message history a store keeps.

a2a-sdk appends every message of a task to ``Task.history`` and saves the whole task
on every event, so a conversation held in one task grows by two messages a turn: by
turn 200 every save writes, and every read parses, 400 messages, and every response
without ``historyLength`` carries them all (~120 KB; docs/performance.md). The
defender's model sees a bounded window anyway (``ARENA_HISTORY_MAX_MESSAGES``), so the
stores keep the same window of the task's history: the oldest messages leave it as new
ones arrive. The task's status message (the latest reply) is not part of the history
and is always kept.

The bound belongs to the stores (``InMemoryVersionedTaskStore`` and ``RedisTaskStore``
trim every task they save), not to an agent or its turn mode: ``GetTask`` and
``ListTasks`` return at most ``max_messages``. A ``SendMessage`` answer is the task
a2a-sdk read from the store plus the turn's own message and the previous reply it
moved into the history, so at most ``max_messages + 2``; it stops growing all the same.
"""

from __future__ import annotations

from a2a.types.a2a_pb2 import Task


def trim_history(task: Task, max_messages: int | None) -> Task:
    """``task`` itself when its history is within ``max_messages`` (None: unbounded), else a
    copy holding only the newest ``max_messages`` messages. The caller's task is never changed."""
    if max_messages is None or len(task.history) <= max_messages:
        return task
    trimmed = Task()
    trimmed.CopyFrom(task)
    del trimmed.history[: len(trimmed.history) - max_messages]
    return trimmed


__all__ = ["trim_history"]
